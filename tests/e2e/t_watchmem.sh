# SPDX-License-Identifier: Apache-2.0
# Memory under watches that never read (issue 29, item 1): hundreds of silent
# watches and large writes keep the server's RSS (from /proc) within its
# budget of bytes held for slow readers, the readers that do read get every
# event, the silent ones are closed once that budget is spent (as
# kube-apiserver's cacher closes a watcher that cannot keep up), and the
# memory comes back once they are gone. Starts its own server with a small
# budget (KUBICLE_WATCH_BUFFER_BYTES).

watchmem_suite() {
  KUBICLE_WATCH_BUFFER_BYTES=$((16 << 20)) start_server watchmem ||
    { fail "watchmem: server did not start"; return; }
  # Under the sanitizers freed memory is quarantined, not reused nor given
  # back: RSS says nothing there, the rest is checked all the same.
  local out rss=1
  grep -q 'libasan' "/proc/$SERVER_PID/maps" 2>/dev/null && rss=0
  out=$(python3 - "$SERVER_URL" "$DATA_DIR" "$SERVER_PID" "$rss" <<'PY' 2>&1
import http.client, json, socket, ssl, sys, threading, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); d = sys.argv[2]; pid = sys.argv[3]
RSS = sys.argv[4] == "1"
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
path = "/api/v1/namespaces/default/configmaps"
BUDGET = 16 << 20
SILENT, FAST, BIG = 200, 2, 700 * 1024

def status(field):
    for line in open("/proc/%s/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
def mb(n): return "%.0fMB" % (n / 1e6)

api = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
def call(method, p, body=None):
    api.request(method, p, json.dumps(body) if body else None, {"Content-Type": "application/json"})
    r = api.getresponse(); data = r.read()
    return r.status, data
st, data = call("GET", path + "?limit=1")
rv = json.loads(data)["metadata"]["resourceVersion"]

def open_watch(rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((u.hostname, u.port))
    t = ctx.wrap_socket(s, server_hostname=u.hostname)
    t.sendall(("GET %s?watch=1&labelSelector=big%%3Dyes&resourceVersion=%s HTTP/1.1\r\nHost: x\r\n\r\n"
               % (path, rv)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += t.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head[:40]
    return t

got = [[] for _ in range(FAST)]
def fast_reader(i, t):
    f = t.makefile("rb")
    while True:  # chunked: size line, data, CRLF
        size = f.readline()
        if not size: return
        n = int(size.strip(), 16)
        if n == 0: return
        chunk = f.read(n); f.read(2)
        ev = json.loads(chunk)
        got[i].append(ev["object"]["metadata"]["name"])

fast = [open_watch() for _ in range(FAST)]
threads = [threading.Thread(target=fast_reader, args=(i, t), daemon=True) for i, t in enumerate(fast)]
for th in threads: th.start()
silent = [open_watch(rcvbuf=4096) for _ in range(SILENT)]
time.sleep(1)
base = status("VmRSS")

slowest = [0.0]
def write(name, c):
    t0 = time.time()
    st, data = call("POST", path, {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"big": "yes"}}, "data": {"v": c * BIG}})
    assert st == 201, (st, data[:200])
    slowest[0] = max(slowest[0], time.time() - t0)

# Three large writes: under the budget, nobody is closed; each event is held
# once for all the silent watches, not once per watch.
for i in range(3):
    write("big-%d" % i, chr(97 + i))
time.sleep(1)
grow = status("VmHWM") - base
print("after 3 writes: rss %s, peak growth %s (%d silent watches)" % (mb(status("VmRSS")), mb(grow), SILENT))
if RSS:
    assert grow < BUDGET + 32e6, "peak RSS grew by %s for 3 events (budget %s)" % (mb(grow), mb(BUDGET))
    print("ok 3 writes: peak RSS within the budget")

# More than the budget: the silent watches are closed, the fast ones go on.
N = 30
for i in range(3, N):
    write("big-%d" % i, chr(97 + i % 26))
want = ["big-%d" % i for i in range(N)]
end = time.time() + 120
while time.time() < end and any(len(g) < N for g in got):
    time.sleep(0.2)
for i, g in enumerate(got):
    assert g == want, "fast watcher %d got %d events: %s" % (i, len(g), g[-3:])
print("ok fast watchers got all %d events in order" % N)
grow = status("VmHWM") - base
print("after %d writes: rss %s, peak growth %s" % (N, mb(status("VmRSS")), mb(grow)))
if RSS:
    assert grow < BUDGET + 48e6, "peak RSS grew by %s (budget %s)" % (mb(grow), mb(BUDGET))
    print("ok %d writes: peak RSS within the budget" % N)
print("slowest create: %.2f s" % slowest[0])

def closed_by_server(t):
    t.settimeout(30)
    try:
        while t.recv(1 << 20):
            pass
        return True  # EOF
    except (ConnectionResetError, ssl.SSLError, OSError):
        return True
    except socket.timeout:
        return False
n_closed = sum(closed_by_server(t) for t in silent)
assert n_closed == SILENT, "%d of %d silent watches closed" % (n_closed, SILENT)
print("ok the server closed the %d silent watches" % SILENT)
for t in silent + fast:
    t.close()
end = time.time() + 60
while RSS and time.time() < end and status("VmRSS") > base + 16e6:
    time.sleep(0.5)
rss = status("VmRSS")
print("after closing: rss %s (before the watches' events: %s)" % (mb(rss), mb(base)))
if RSS:
    assert rss <= base + 16e6, "RSS stayed at %s (was %s)" % (mb(rss), mb(base))
    print("ok RSS came back")
st, _ = call("DELETE", path + "?labelSelector=big%3Dyes")
time.sleep(3)
print("after deleting them: rss %s" % mb(status("VmRSS")))
PY
)
  echo "$out" | grep -v '^ok ' | sed 's/^/  /'
  local want wants=("fast watchers got all 30 events in order" "the server closed the 200 silent watches")
  [ $rss = 1 ] && wants+=("3 writes: peak RSS within the budget" "30 writes: peak RSS within the budget" "RSS came back")
  for want in "${wants[@]}"; do
    if grep -qF "ok $want" <<<"$out"; then pass "watchmem: $want"; else fail "watchmem: $want"; fi
  done
  grep -Eq "closing a stream whose reader is too slow|client too slow, closing watch" \
    "$E2E_TMP/watchmem.log" &&
    pass "watchmem: the server logs the watches it closed" ||
    fail "watchmem: no log line for the closed watches"
  expect "watchmem: /metrics counts the closed watches (kube's apiserver_terminated_watchers_total)" \
    '^kubicle_terminated_watchers_total ([2-9][0-9][0-9]|[1-9][0-9]{3,})$' kcurl "$SERVER_URL/metrics"
  stop_server
}

# A resourceVersion newer than the store's (issue 29, item 4) on GET and
# WATCH gets kube's "Too large resource version" (504 Timeout with the
# ResourceVersionTooLarge cause and retryAfterSeconds; a watch as an ERROR
# event), as LIST does; and list pages (item 5): remainingItemCount on a
# page without a selector, as kube's etcd3 store sets it. Uses `main`.
lw_code() { # URL: "CODE BODY"
  local out
  out=$(kcurl -w ' %{http_code}' "$1") || return 1
  echo "${out##* } ${out% *}"
}
listwatch_suite() {
  local cm=$SERVER_URL/api/v1/namespaces/default/configmaps i rv big
  for i in 1 2 3 4 5; do
    kcurl -X POST -H 'Content-Type: application/json' "$cm" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"lw-$i\",\"labels\":{\"lw\":\"yes\"}}}" >/dev/null
  done
  rv=$(kcurl "$cm?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
  big=$((rv + 1000))
  local too_large='"reason":"Timeout","details":\{"causes":\[\{"reason":"ResourceVersionTooLarge","message":"Too large resource version"\}\],"retryAfterSeconds":1\},"code":504'
  expect "GET at a resourceVersion newer than the store: 504 Too large resource version" \
    "^504 .*\"message\":\"Too large resource version: $big, current: [0-9]+\",$too_large" \
    lw_code "$cm/lw-1?resourceVersion=$big"
  expect_fail "kubectl shows it as kube's Timeout error" \
    "Error from server \\(Timeout\\): Too large resource version: $big, current: [0-9]+" \
    kubectl --kubeconfig "$KCFG" get --raw "/api/v1/namespaces/default/configmaps/lw-1?resourceVersion=$big"
  expect "kubectl pages of 2 (--chunk-size) list every ConfigMap" '^lw-1 lw-2 lw-3 lw-4 lw-5$' \
    sh -c "kubectl --kubeconfig '$KCFG' get cm -l lw=yes --chunk-size=2 -o name | sed 's|.*/||' | tr '\\n' ' ' | sed 's/ \$//'"
  expect "GET at the current resourceVersion answers the object" '"name":"lw-1"' kcurl "$cm/lw-1?resourceVersion=$rv"
  expect "GET at resourceVersion 0 answers the object" '"name":"lw-1"' kcurl "$cm/lw-1?resourceVersion=0"
  expect "LIST at a newer resourceVersion: the same answer" "$too_large" kcurl "$cm?resourceVersion=$big"
  expect "WATCH at a newer resourceVersion: an ERROR event, Too large resource version" \
    "^\\{\"type\":\"ERROR\",\"object\":\\{\"kind\":\"Status\".*$too_large\\}\\}\$" \
    kcurl --max-time 10 "$cm?watch=1&resourceVersion=$big"
  expect "a WatchList request at a newer resourceVersion: the same ERROR event" \
    "\"type\":\"ERROR\".*ResourceVersionTooLarge" \
    kcurl --max-time 10 "$cm?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=$big&allowWatchBookmarks=true"
  expect "WATCH at the current resourceVersion streams (no error)" '^$' \
    kcurl --max-time 10 "$cm?watch=1&resourceVersion=$rv&timeoutSeconds=1"

  # remainingItemCount: on a page without a selector, not with one
  local n
  n=$(kcurl "$cm" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  expect "a first page says how many items remain" "\"remainingItemCount\":$((n - 2))[,}]" kcurl "$cm?limit=2"
  local na
  na=$(kcurl "$SERVER_URL/api/v1/configmaps" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  expect "so does a cluster-wide first page, exactly" "\"remainingItemCount\":$((na - 2))[,}]" \
    kcurl "$SERVER_URL/api/v1/configmaps?limit=2"
  kcurl -X DELETE "$cm/lw-5" >/dev/null
  expect "a delete is counted at once" "\"remainingItemCount\":$((na - 3))[,}]" \
    kcurl "$SERVER_URL/api/v1/configmaps?limit=2"
  kcurl -X POST -H 'Content-Type: application/json' "$cm" -d '{"metadata":{"name":"lw-5"}}' >/dev/null
  expect "and a create" "\"remainingItemCount\":$((na - 2))[,}]" \
    kcurl "$SERVER_URL/api/v1/configmaps?limit=2"
  local cont
  cont=$(kcurl "$cm?limit=2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["continue"])')
  expect "and a next page" "\"remainingItemCount\":$((n - 4))[,}]" kcurl "$cm?limit=2&continue=$cont"
  expect "a page with a label selector does not" '"continue":"[^"]*"\}' kcurl "$cm?limit=2&labelSelector=lw%3Dyes"
  expect "nor the last page" '"metadata":\{"resourceVersion":"[0-9]+"\}' kcurl "$cm?limit=1000"
  # cluster-wide pages cover every object once, in namespace/name order
  local all paged
  all=$(kcurl "$SERVER_URL/api/v1/configmaps" | python3 -c 'import json,sys; print(" ".join(i["metadata"]["namespace"]+"/"+i["metadata"]["name"] for i in json.load(sys.stdin)["items"]))')
  paged=$(python3 - "$SERVER_URL" "$DATA_DIR" <<'PY'
import http.client, json, ssl, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); d = sys.argv[2]
ctx = ssl.create_default_context(cafile=d + "/ca.crt"); ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx); names = []; cont = ""
while True:
    c.request("GET", "/api/v1/configmaps?limit=3" + ("&continue=" + cont if cont else ""))
    l = json.loads(c.getresponse().read())
    names += [i["metadata"]["namespace"] + "/" + i["metadata"]["name"] for i in l["items"]]
    cont = l["metadata"].get("continue")
    if not cont: break
print(" ".join(names))
PY
)
  if [ -n "$all" ] && [ "$all" = "$paged" ]; then pass "cluster-wide pages of 3 cover the list once, in order"
  else fail "cluster-wide pages: '$paged' vs '$all'"; fi
  # a page is written from the stored texts while the store has not changed
  # since the first page, and built from the history's objects after a
  # change: the same bytes (JSON and Table) but remainingItemCount, which
  # only the first kind counts
  local same
  same=$(python3 - "$SERVER_URL" "$DATA_DIR" <<'PY'
import http.client, json, re, ssl, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); d = sys.argv[2]
ctx = ssl.create_default_context(cafile=d + "/ca.crt"); ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
def get(path, accept="application/json"):
    c.request("GET", path, headers={"Accept": accept})
    return c.getresponse().read().decode()
table = "application/json;as=Table;v=v1;g=meta.k8s.io"
base = "/api/v1/namespaces/default/configmaps?limit=2"
cont = json.loads(get(base))["metadata"]["continue"]
text = [get(base + "&continue=" + cont), get(base + "&continue=" + cont, table)]
c.request("POST", "/api/v1/namespaces/kube-system/configmaps", body='{"metadata":{"name":"lw-page-write"}}',
          headers={"Content-Type": "application/json"}); c.getresponse().read()
tree = [get(base + "&continue=" + cont), get(base + "&continue=" + cont, table)]
c.request("DELETE", "/api/v1/namespaces/kube-system/configmaps/lw-page-write"); c.getresponse().read()
strip = lambda t: re.sub(r',"remainingItemCount":[0-9]+', "", t)
ok = ('"remainingItemCount"' in text[0] and strip(text[0]) == tree[0] and text[1] == tree[1]
      and len(json.loads(text[0])["items"]) == 2 and len(json.loads(text[1])["rows"]) == 2)
print("same" if ok else "differ:\n" + "\n".join(t[:400] for t in text + tree))
PY
)
  expect_eq "a page from stored texts: the bytes of the page built from objects" same echo "$same"
  kcurl -X DELETE "$cm?labelSelector=lw%3Dyes" >/dev/null
}
