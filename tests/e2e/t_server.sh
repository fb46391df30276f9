# SPDX-License-Identifier: Apache-2.0
# The server beyond kubectl: health, authentication, discovery media types,
# bad input, restarts and kill -9 durability. Uses curl and python3.

server_suite_basic() {
  local c=(curl -sS --cacert "$DATA_DIR/ca.crt")
  expect "healthz answers anonymously" '^ok$' "${c[@]}" "$SERVER_URL/healthz"
  expect "livez answers" '^ok$' "${c[@]}" "$SERVER_URL/livez"
  expect "readyz answers" '^ok$' "${c[@]}" "$SERVER_URL/readyz"
  expect "version is 1.33" '"minor":"33"' "${c[@]}" "$SERVER_URL/version"
  expect "API needs a credential (401)" '"code":401' "${c[@]}" "$SERVER_URL/api/v1/namespaces"
  expect "aggregated discovery v2 media type" '[Cc]ontent-[Tt]ype: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' \
    kcurl -i -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' "$SERVER_URL/apis"
  expect "aggregated discovery v2beta1 media type" 'v=v2beta1;as=APIGroupDiscoveryList' \
    kcurl -i -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json' "$SERVER_URL/api"
  expect "legacy /apis is an APIGroupList" '"kind":"APIGroupList"' kcurl "$SERVER_URL/apis"
  expect "/api/v1 resource list" '"groupVersion":"v1"' kcurl "$SERVER_URL/api/v1"
  expect "/apis/apps/v1 lists deployments/scale" '"name":"deployments/scale"' kcurl "$SERVER_URL/apis/apps/v1"
  expect "openapi v3 root lists apps/v1" '"apis/apps/v1"' kcurl "$SERVER_URL/openapi/v3"
  expect "namespaces exist" 'kube-node-lease' kcurl "$SERVER_URL/api/v1/namespaces"
  # every answer names its audit event (kube's Audit-Id), a client's own ID is kept
  local aid
  aid=$(kcurl -sS -i "$SERVER_URL/api/v1/namespaces/default" | tr -d '\r' | sed -n 's/^[Aa]udit-[Ii]d: //p')
  expect_until_match "an answer's Audit-Id names its audit event" 10 '"verb":"get"' \
    grep -F "\"auditID\":\"${aid:-none}\"" "$DATA_DIR/audit.log"
  expect "a client's Audit-ID is answered back" '^[Aa]udit-[Ii]d: e2e-audit-42' \
    kcurl -sS -i -H 'Audit-ID: e2e-audit-42' "$SERVER_URL/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
  expect_until_match "and used for its audit event" 10 '"stage":"ResponseStarted"' \
    grep -F '"auditID":"e2e-audit-42"' "$DATA_DIR/audit.log"
  # a user agent that is not UTF-8 cannot keep a request out of the audit log
  # (its bytes are written as U+FFFD, as Go's JSON encoder does); every line parses
  kcurl -sS -o /dev/null -H "$(printf 'User-Agent: evil\377\376agent')" -H 'Audit-ID: e2e-audit-utf8' \
    "$SERVER_URL/api/v1/namespaces/default/secrets"
  expect_until_match "a request with a non-UTF-8 user agent is audited" 10 '"userAgent":"evil\\ufffd\\ufffdagent"' \
    grep -F '"auditID":"e2e-audit-utf8"' "$DATA_DIR/audit.log"
  expect "every audit line is one JSON object" "ok" \
    python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]; print("ok")' "$DATA_DIR/audit.log"
  expect "kubernetes service in default" '"clusterIP":"10.96.0.1"' kcurl "$SERVER_URL/api/v1/namespaces/default/services/kubernetes"
  # list paging with limit and continue
  local i
  for i in 1 2 3 4 5; do
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"page-$i\",\"labels\":{\"page\":\"yes\"}}}" >/dev/null
  done
  local first cont second
  first=$(kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps?labelSelector=page%3Dyes&limit=2")
  cont=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"].get("continue",""))' <<<"$first")
  second=$(kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps?labelSelector=page%3Dyes&limit=10&continue=$cont")
  local names
  names=$(python3 -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(" ".join(i["metadata"]["name"] for i in a["items"]+b["items"]))' "$first" "$second")
  if [ "$names" = "page-1 page-2 page-3 page-4 page-5" ]; then pass "limit+continue pages cover the list once"
  else fail "limit+continue: got '$names'"; fi
  # optimistic concurrency
  expect "update with a stale resourceVersion is 409 Conflict" '"reason":"Conflict"' \
    kcurl -X PUT -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps/page-1" \
      -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"page-1","resourceVersion":"1"},"data":{"x":"y"}}'
  expect "dryRun=All create answers but does not store" '"name":"dry"' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps?dryRun=All" \
      -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"}}'
  expect "dry-run object is not stored" '"code":404' kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps/dry"
  # a dry run is refused as the create would be (apiserver registry/dryrun.go)
  expect "dryRun=All create of a name taken is 409 AlreadyExists" \
    '"reason":"AlreadyExists".*"code":409' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps?dryRun=All" \
      -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"page-1"}}'
  expect_fail "kubectl create --dry-run=server of a name taken: AlreadyExists" \
    'configmaps "page-1" already exists' \
    kubectl --kubeconfig "$KCFG" create configmap page-1 --dry-run=server
  expect "deletecollection by label" '"kind":"ConfigMapList"' \
    kcurl -X DELETE "$SERVER_URL/api/v1/namespaces/default/configmaps?labelSelector=page%3Dyes"
  expect "deletecollection removed them" '"items":\[\]' kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps?labelSelector=page%3Dyes"
  # finalizers keep an object until they are removed
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps" \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fin","finalizers":["example.com/hold"]}}' >/dev/null
  expect "delete with a finalizer sets deletionTimestamp" '"deletionTimestamp"' kcurl -X DELETE "$SERVER_URL/api/v1/namespaces/default/configmaps/fin"
  expect "the object stays while finalized" '"name":"fin"' kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps/fin"
  kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' "$SERVER_URL/api/v1/namespaces/default/configmaps/fin" \
    -d '{"metadata":{"finalizers":null}}' >/dev/null
  expect "removing the last finalizer deletes it" '"code":404' kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps/fin"
  # core/v1 and events.k8s.io/v1 Events are the same objects
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/events" \
    -d '{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev1"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"Test","message":"hello core","type":"Normal"}' >/dev/null
  expect "a core event is served by events.k8s.io/v1" '"regarding":\{[^}]*"name":"p".*"note":"hello core"' \
    kcurl "$SERVER_URL/apis/events.k8s.io/v1/namespaces/default/events/ev1"
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/apis/events.k8s.io/v1/namespaces/default/events" \
    -d '{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ev2"},"regarding":{"kind":"Pod","name":"q","namespace":"default"},"reason":"Test","note":"hello new","type":"Normal","eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"e2e","reportingInstance":"e2e-1","action":"Testing"}' >/dev/null
  expect "an events.k8s.io event is served by core/v1" '"involvedObject":\{[^}]*"name":"q".*"message":"hello new"' \
    kcurl "$SERVER_URL/api/v1/namespaces/default/events/ev2"
  expect "events.k8s.io field selector on regarding" '"name":"ev2"' \
    kcurl "$SERVER_URL/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dq"
  # watch resume from a resourceVersion, and 410 for compacted history
  local rv
  rv=$(kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps" \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}' >/dev/null
  expect "watch resumes after a resourceVersion" '"type":"ADDED","object":\{"apiVersion":"v1","kind":"ConfigMap".*"name":"after"' \
    kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=$rv&timeoutSeconds=1"
  expect "watch ends at timeoutSeconds (bookmarks asked for)" '' \
    kcurl -m 5 "$SERVER_URL/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=$rv&timeoutSeconds=1&allowWatchBookmarks=true"
  # A continue token lists the collection as of the first page's revision.
  local ns=snap-e2e tok
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" >/dev/null
  for n in s1 s2 s3 s4; do
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/$ns/configmaps" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$n\"},\"data\":{\"v\":\"old\"}}" >/dev/null
  done
  tok=$(kcurl "$SERVER_URL/api/v1/namespaces/$ns/configmaps?limit=3" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["continue"])')
  kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' "$SERVER_URL/api/v1/namespaces/$ns/configmaps/s3" -d '{"data":{"v":"new"}}' >/dev/null
  kcurl -X DELETE "$SERVER_URL/api/v1/namespaces/$ns/configmaps/s4" >/dev/null
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/$ns/configmaps" \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s2a"}}' >/dev/null
  # (the first page: kube-root-ca.crt, s1, s2)
  expect_eq "continue: the next page as of the first page (old s3, deleted s4 still there, new s2a not)" \
    "s3=old s4=old" \
    python3 -c 'import json,sys; print(" ".join(i["metadata"]["name"]+"="+i["data"]["v"] for i in json.loads(sys.argv[1])["items"]))' \
    "$(kcurl "$SERVER_URL/api/v1/namespaces/$ns/configmaps?limit=2&continue=$tok")"
  # WatchList (sendInitialEvents): the current objects, then a bookmark marked
  # k8s.io/initial-events-end at the revision they were listed at; kube's
  # option validation for watches.
  local cm=$SERVER_URL/api/v1/namespaces/default/configmaps wl
  wl=$(kcurl -m 5 "$cm?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1")
  expect "sendInitialEvents: ADDED for existing objects, then the initial-events-end bookmark" \
    '"type":"ADDED".*"name":"after".*"type":"BOOKMARK".*"k8s.io/initial-events-end":"true"' echo "${wl//$'\n'/ }"
  expect_eq "the initial-events-end bookmark is the last line, at the list's revision" \
    "BOOKMARK $(kcurl "$cm" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')" \
    python3 -c 'import json,sys; e=json.loads(sys.argv[1].splitlines()[-1]); print(e["type"], e["object"]["metadata"]["resourceVersion"])' "$wl"
  expect "sendInitialEvents=false starts after now: nothing old is sent" '^$' \
    kcurl -m 5 "$cm?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
  expect "sendInitialEvents without resourceVersionMatch=NotOlderThan is 422" \
    'ListOptions.meta.k8s.io .* is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan.*"reason":"Invalid".*"kind":"ListOptions".*"code":422' \
    kcurl "$cm?watch=1&sendInitialEvents=true"
  expect "sendInitialEvents on a list is 422" \
    'ListOptions.meta.k8s.io .* is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list.*"code":422' \
    kcurl "$cm?sendInitialEvents=false"
  expect "resourceVersionMatch on a watch needs sendInitialEvents" \
    'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' \
    kcurl "$cm?watch=1&resourceVersion=$rv&resourceVersionMatch=NotOlderThan"
}

server_suite_bad_input() {
  local u=$SERVER_URL/api/v1/namespaces/default/configmaps
  local before
  before=$(kcurl "$u" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  expect "malformed JSON is 400 BadRequest" '"reason":"BadRequest"' kcurl -X POST -H 'Content-Type: application/json' "$u" -d '{"apiVersion":'
  expect "wrong kind is 400" '"code":400' kcurl -X POST -H 'Content-Type: application/json' "$u" -d '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"k"}}'
  expect "wrong apiVersion is 400" 'does not match the expected API version' kcurl -X POST -H 'Content-Type: application/json' "$u" -d '{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"k"}}'
  expect "a JSON array body is 400" '"code":400' kcurl -X POST -H 'Content-Type: application/json' "$u" -d '[1,2]'
  expect "unknown media type is 415" '"code":415' kcurl -X POST -H 'Content-Type: text/csv' "$u" -d 'a,b'
  head -c 3200000 /dev/zero | tr '\0' 'a' >"$E2E_TMP/big.json"
  expect "a body over 3 MiB is 413" '413|RequestEntityTooLarge' kcurl -i -X POST -H 'Content-Type: application/json' "$u" --data-binary @"$E2E_TMP/big.json"
  expect "headers too large are refused" '431' kcurl -i -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' 'b')" "$SERVER_URL/version"
  expect "unknown path is 404 Status" '"reason":"NotFound"' kcurl "$SERVER_URL/apis/nope.example.com/v1/things"
  expect "hostile path is refused" '"code":40[04]' kcurl --path-as-is "$SERVER_URL/api/v1/namespaces/..%2f..%2fetc/configmaps"
  expect "invalid name is 422 Invalid" '"reason":"Invalid"' kcurl -X POST -H 'Content-Type: application/json' "$u" -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"UPPER_case"}}'
  expect "unknown namespace is 404" 'namespaces \\"nope\\" not found' kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/nope/configmaps" -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}'
  expect "garbage protobuf is 400" '"code":400' kcurl -X POST -H 'Content-Type: application/vnd.kubernetes.protobuf' "$u" --data-binary 'k8s'
  # a stalled client and 2000 idle connections must not stop others being served
  python3 - "$SERVER_URL" >"$E2E_TMP/idle.out" 2>&1 <<'PY' &
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
socks = []
for i in range(2000):
    try:
        s = socket.create_connection((u.hostname, u.port)); socks.append(s)
    except OSError as e:
        print("connect failed after", i, e); break
stalled = socket.create_connection((u.hostname, u.port)); stalled.send(b"\x16\x03\x01")  # half a TLS hello
print("opened", len(socks)); sys.stdout.flush()
time.sleep(4)
PY
  local idle=$!
  wait_for "2000 idle connections and a stalled one open" 30 grep -q opened "$E2E_TMP/idle.out"
  expect "served while 2000 connections idle" '^ok$' curl -sS -m 3 --cacert "$DATA_DIR/ca.crt" "$SERVER_URL/readyz"
  expect "API served while connections idle" '"kind":"NamespaceList"' kcurl -m 3 "$SERVER_URL/api/v1/namespaces"
  kill $idle 2>/dev/null; wait $idle
  expect "idle connections were accepted" 'opened 2000' cat "$E2E_TMP/idle.out"
  local after
  after=$(kcurl "$u" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  if [ "$before" = "$after" ]; then pass "bad requests stored nothing"; else fail "bad requests stored something: $before -> $after"; fi
  if kill -0 "$SERVER_PID" 2>/dev/null; then pass "server still up after bad input"; else fail "server died"; fi
}

# A watch whose reader stalls while events pile up: the server keeps serving
# others, and once the reader reads, every event arrives whole and in order
# (handed-over TLS 1.3 stream: batched sends, then queued partial writes).
server_suite_stalled_watch() {
  expect "a stalled watch reader gets every event in order" '^ok 60 events in order$' \
    python3 - "$SERVER_URL" "$DATA_DIR" <<'PY'
import http.client, json, socket, ssl, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); d = sys.argv[2]
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
def conn(rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((u.hostname, u.port))
    c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
    c.sock = ctx.wrap_socket(s, server_hostname=u.hostname)
    return c
path = "/api/v1/namespaces/default/configmaps"
api = conn()
api.request("GET", path + "?limit=1"); rv = json.loads(api.getresponse().read())["metadata"]["resourceVersion"]
w = conn(rcvbuf=4096)
w.request("GET", path + "?watch=1&labelSelector=stall%3Dyes&resourceVersion=" + rv)
resp = w.getresponse()
assert resp.status == 200, resp.status
n = 60
for i in range(n):  # about 12 MB the reader does not read yet
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "stall-%d" % i, "labels": {"stall": "yes"}},
            "data": {"v": chr(97 + i % 26) * 200000}}
    api.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = api.getresponse(); r.read()
    assert r.status == 201, r.status
time.sleep(0.5)
for i in range(n):
    ev = json.loads(resp.readline())
    o = ev["object"]
    assert ev["type"] == "ADDED" and o["metadata"]["name"] == "stall-%d" % i, (i, ev["type"], o["metadata"]["name"])
    assert o["data"]["v"] == chr(97 + i % 26) * 200000, i
print("ok %d events in order" % n)
api.request("DELETE", path + "?labelSelector=stall%3Dyes"); api.getresponse().read()
PY
}

# Watch streams that vanish while events are being fanned out to them (reset,
# closed, or never read until the server gives up on them) while others keep
# reading: the server stays up and keeps answering.
server_suite_watch_churn() {
  expect "watchers vanishing mid-fan-out do not hurt the server" '^readyz 200 after [0-9]+ creates$' \
    python3 - "$SERVER_URL" "$DATA_DIR" <<'PY'
import http.client, json, random, socket, ssl, struct, sys, threading, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); d = sys.argv[2]
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
path = "/api/v1/namespaces/default/configmaps"
lc = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
def open_watch():
    lc.request("GET", path + "?limit=1"); rv = json.loads(lc.getresponse().read())["metadata"]["resourceVersion"]
    t = ctx.wrap_socket(socket.create_connection((u.hostname, u.port)), server_hostname=u.hostname)
    t.sendall(("GET %s?watch=1&labelSelector=churn%%3Dyes&resourceVersion=%s HTTP/1.1\r\nHost: x\r\n\r\n" % (path, rv)).encode())
    t.settimeout(10); t.recv(4096); t.setblocking(False)
    return t
random.seed(7)
ws = [open_watch() for _ in range(100)]
stop, made = False, [0]
def creator():
    c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
    while not stop:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "churn-%d" % made[0], "labels": {"churn": "yes"}},
                "data": {"v": "x" * random.randint(10, 20000)}}
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        assert r.status == 201, r.status
        made[0] += 1
th = threading.Thread(target=creator); th.start()
for rnd in range(12):
    time.sleep(0.1)
    for k in random.sample(range(len(ws)), 25):
        w, how = ws[k], random.random()
        try:
            if how < 0.4:
                w.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset
                w.close()
            elif how < 0.7:
                w.close()
            else:
                try: w.recv(1 << 20)
                except (ssl.SSLWantReadError, BlockingIOError): pass
                continue
        except OSError: pass
        ws[k] = open_watch()
stop = True; th.join()
lc.request("GET", "/readyz"); r = lc.getresponse(); r.read()
print("readyz %d after %d creates" % (r.status, made[0]))
lc.request("DELETE", path + "?labelSelector=churn%3Dyes"); lc.getresponse().read()
PY
}

server_suite_restart() {
  local u=$SERVER_URL/api/v1/namespaces/default/configmaps
  kcurl -X POST -H 'Content-Type: application/json' "$u" -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"},"data":{"a":"b"}}' >/dev/null
  local rv1
  rv1=$(kcurl "$u/keep" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
  stop_server TERM
  if grep -q 'stopped' "$E2E_TMP/main.log"; then pass "SIGTERM shuts down cleanly"; else fail "no clean shutdown: $(tail -3 "$E2E_TMP/main.log")"; fi
  start_server main || { fail "restart"; return; }
  u=$SERVER_URL/api/v1/namespaces/default/configmaps
  expect_eq "restart keeps objects and resourceVersion" "$rv1 b" \
    bash -c "curl -sS --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key $u/keep | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o[\"metadata\"][\"resourceVersion\"], o[\"data\"][\"a\"])'"
  expect "watch history survives restart" '"name":"keep"' kcurl "$u?watch=true&resourceVersion=$((rv1 - 1))&timeoutSeconds=1"
  # kill -9: every acknowledged write survives
  local acked=0 i code
  for i in $(seq 1 40); do
    code=$(kcurl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' "$u" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"durable-$i\"}}")
    [ "$code" = 201 ] && acked=$i
  done
  stop_server KILL
  start_server main || { fail "restart after kill -9"; return; }
  u=$SERVER_URL/api/v1/namespaces/default/configmaps
  local have
  have=$(kcurl "$u" | python3 -c 'import json,sys; print(sum(1 for i in json.load(sys.stdin)["items"] if i["metadata"]["name"].startswith("durable-")))')
  if [ "$acked" = 40 ] && [ "$have" = 40 ]; then pass "every acknowledged write survives kill -9"
  else fail "kill -9: acked $acked, found $have"; fi
}

# Watch history is compacted on a schedule; a watch from before it gets 410.
server_suite_compaction() {
  local saved_pid=$SERVER_PID saved_kcfg=$KCFG saved_url=$SERVER_URL saved_dir=$DATA_DIR
  start_server compact --watch-history 5 --compact-interval-ms 200 || { fail "compaction server"; return; }
  local u=$SERVER_URL/api/v1/namespaces/default/configmaps i
  for i in $(seq 1 20); do
    kcurl -X POST -H 'Content-Type: application/json' "$u" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c$i\"}}" >/dev/null
  done
  expect_until_match "watch from a compacted revision gets ERROR 410 Expired" 20 '"type":"ERROR".*"reason":"Expired".*"code":410' \
    kcurl -m 5 "$u?watch=true&resourceVersion=2"
  local rv
  rv=$(kcurl "$u" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
  expect "watch from a recent revision still works" '"type":"ADDED".*"name":"late"' \
    bash -c "(sleep 0.5; curl -sS --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key -X POST -H 'Content-Type: application/json' $u -d '{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"late\"}}' >/dev/null) & curl -sS -m 5 --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key '$u?watch=true&resourceVersion=$rv&timeoutSeconds=2'"
  stop_server TERM
  SERVER_PID=$saved_pid KCFG=$saved_kcfg SERVER_URL=$saved_url DATA_DIR=$saved_dir
}
