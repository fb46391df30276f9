# SPDX-License-Identifier: Apache-2.0
# SPDY through a tenant, as older kubectl speaks it and as port-forward
# always does (tunnelled in WebSocket from kubectl 1.31). Needs the syncer
# suite's host stand-in and tenant t1.
#
# kubectl port-forward through a tenant: the tenant checks the pod and RBAC,
# the syncer opens the same upgrade to the host pod, and the host stand-in
# (--standin-exec) answers as a kubelet would, connecting to this machine's
# loopback port (tests/host/standin_portforward.c). kubectl 1.31 and later tunnel
# SPDY in WebSocket; 1.30 and earlier upgrade to SPDY itself: both pass.

PF_HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")

# pf_start KUBECONFIG KUBECTL POD LOCAL:REMOTE [ARGS...]: starts kubectl port-forward
# in the background (PF_PID, output in PF_OUT) and waits until it listens.
pf_start() {
  local kcfg=$1 k=$2 pod=$3; shift 3
  PF_OUT=$E2E_TMP/pf.$RANDOM.out
  "$k" --kubeconfig "$kcfg" port-forward "$pod" "$@" >"$PF_OUT" 2>&1 &
  PF_PID=$!
  local i
  for i in $(seq 100); do
    grep -q "Forwarding from 127.0.0.1:${1%%:*}" "$PF_OUT" && return 0
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

pf_stop() { kill "$PF_PID" 2>/dev/null; wait "$PF_PID" 2>/dev/null; }

# curl as the host stand-in's admin
pf_hcurl() {
  curl -sS --cacert "$E2E_TMP/syhost/ca.crt" --cert "$E2E_TMP/syhost/admin.crt" --key "$E2E_TMP/syhost/admin.key" "$@"
}

pf_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

syncer_suite_portforward() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local echo_pid port lp k ws spdy dead hostlog=$E2E_TMP/syhost.log
  python3 "$PF_HERE/pfecho.py" serve "$E2E_TMP/pfecho.port" & echo_pid=$!
  for _ in $(seq 50); do [ -s "$E2E_TMP/pfecho.port" ] && break; sleep 0.1; done
  port=$(cat "$E2E_TMP/pfecho.port")
  "${T[@]}" run pf --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/pf --timeout=20s >/dev/null
  ws=$(grep -c 'port-forward tenants/pf-x-default-x-t1: session open (SPDY in WebSocket)' "$hostlog")
  spdy=$(grep -c 'port-forward tenants/pf-x-default-x-t1: session open (SPDY)' "$hostlog")
  for k in "$E2E_KUBECTL_DISPATCHER" "$GSDK/kubectl.1.33" "$GSDK/kubectl.1.30" "$GSDK/kubectl.1.27"; do
    [ -x "$k" ] || continue
    lp=$(pf_free_port)
    if pf_start "$T_t1_KCFG" "$k" pod/pf "$lp:$port"; then
      expect_eq "port-forward ($(basename "$k")): 1 MB there and back, byte for byte" "1 of 1" \
        python3 "$PF_HERE/pfecho.py" roundtrip "$lp" 1000000 1
    else
      fail "port-forward ($(basename "$k")) did not listen: $(head -c 400 "$PF_OUT")"
    fi
    pf_stop
  done
  expect "port-forward: kubectl 1.31+ tunnelled SPDY in WebSocket through the tenant" '^[1-9]' \
    sh -c "echo \$((\$(grep -c 'pf-x-default-x-t1: session open (SPDY in WebSocket)' $hostlog) - $ws))"
  expect "port-forward: kubectl 1.30 and 1.27 upgraded to SPDY through the tenant" '^[2-9]' \
    sh -c "echo \$((\$(grep -c 'pf-x-default-x-t1: session open (SPDY)' $hostlog) - $spdy))"
  # several connections at once over one session, and a big one through
  # SPDY itself (the client's reading pauses while the socket is behind)
  lp=$(pf_free_port)
  pf_start "$T_t1_KCFG" kubectl pod/pf "$lp:$port"
  expect_eq "port-forward: 8 connections at once, 2 MB each, none mixed up" "8 of 8" \
    python3 "$PF_HERE/pfecho.py" roundtrip "$lp" 2000000 8
  pf_stop
  if [ -x "$GSDK/kubectl.1.27" ]; then
    lp=$(pf_free_port)
    pf_start "$T_t1_KCFG" "$GSDK/kubectl.1.27" pod/pf "$lp:$port"
    expect_eq "port-forward (1.27, SPDY): 40 MB there and back" "1 of 1" \
      python3 "$PF_HERE/pfecho.py" roundtrip "$lp" 40000000 1
    pf_stop
  fi
  # nothing listens on the pod's port: the kubelet's message on the error stream
  dead=$(pf_free_port); lp=$(pf_free_port)
  pf_start "$T_t1_KCFG" kubectl pod/pf "$lp:$dead"
  python3 "$PF_HERE/pfecho.py" roundtrip "$lp" 10 1 >/dev/null 2>&1
  sleep 0.5
  expect "port-forward: a port nothing listens on is an error in the kubelet's words" \
    "an error occurred forwarding $lp -> $dead: error forwarding port $dead to pod tenants/pf-x-default-x-t1, uid [0-9a-f-]+: failed to connect to 127.0.0.1:$dead: connection refused" \
    cat "$PF_OUT"
  pf_stop
  # the stand-in answers kubectl on the host itself
  lp=$(pf_free_port)
  pf_start "$SY_HOST_KCFG" kubectl pod/pf-x-default-x-t1 "$lp:$port" -n tenants
  expect_eq "port-forward: the stand-in answers on the host itself" "1 of 1" \
    python3 "$PF_HERE/pfecho.py" roundtrip "$lp" 100000 1
  pf_stop
  # client libraries other than client-go: the kubelet's WebSocket channels
  if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then
    dead=$(pf_free_port)
    /usr/bin/python3 "$PF_HERE/pyportforward.py" client "$T_t1_KCFG" default pf "$port" "$dead" \
      >"$E2E_TMP/pypf.out" 2>&1
    expect "port-forward (Python client, WebSocket channels): 200 kB there and back" '^echo ok$' \
      cat "$E2E_TMP/pypf.out"
    expect "port-forward (Python client): a dead port's error on its error channel" \
      "^error error forwarding port $dead to pod tenants/pf-x-default-x-t1, uid [0-9a-f-]+: failed to connect" \
      cat "$E2E_TMP/pypf.out"
    /usr/bin/python3 "$PF_HERE/pyportforward.py" exec "$T_t1_KCFG" default pf >"$E2E_TMP/pyexec.out" 2>&1
    expect_eq "exec (Python client, WebSocket v4.channel.k8s.io): output, and stdin read back" \
      "$(printf 'exec from-python\nstdin through stdin')" cat "$E2E_TMP/pyexec.out"
    /usr/bin/python3 "$PF_HERE/pyportforward.py" b64 "$E2E_TMP/syhost" "$SY_HOST_PORT" \
      /api/v1/namespaces/tenants/pods/pf-x-default-x-t1/portforward "$port" >"$E2E_TMP/b64pf.out" 2>&1
    expect_eq "port-forward (v4.base64.channel.k8s.io): each channel starts with the port, then the echo" \
      "$(printf 'first True v4.base64.channel.k8s.io\necho base64 ping')" cat "$E2E_TMP/b64pf.out"
  else
    fail "port-forward (Python client): python3-kubernetes is not installed (scripts/setup.sh installs it)"
  fi
  expect "port-forward: the channel protocol wants its ports" 'query parameter \\"ports\\" is required' \
    pf_hcurl -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
      -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Protocol: v4.channel.k8s.io' \
      "https://127.0.0.1:$SY_HOST_PORT/api/v1/namespaces/tenants/pods/pf-x-default-x-t1/portforward"
  # RBAC: port-forward is create on pods/portforward
  "$KUBICLE" kubeconfig --data-dir "$E2E_TMP/t1" --user pfuser --out "$E2E_TMP/pfuser.kcfg" >/dev/null
  "${T[@]}" create role pf-get --verb=get,list --resource=pods,pods/portforward >/dev/null
  "${T[@]}" create rolebinding pfuser-get --role=pf-get --user=pfuser >/dev/null
  lp=$(pf_free_port)
  expect_fail "port-forward: get on pods/portforward alone is refused" \
    'cannot create resource "pods/portforward" in API group "" in the namespace "default"' \
    timeout 20 kubectl --kubeconfig "$E2E_TMP/pfuser.kcfg" port-forward pod/pf "$lp:$port"
  # protocol errors on the stand-in
  local hp=/api/v1/namespaces/tenants/pods/pf-x-default-x-t1/portforward
  expect "port-forward: a SPDY client of another protocol is refused as the kubelet does" \
    'unable to negotiate protocol: client supports v4.channel.k8s.io, server supports portforward.k8s.io' \
    pf_hcurl -X POST -H 'Connection: Upgrade' -H 'Upgrade: SPDY/3.1' -H 'X-Stream-Protocol-Version: v4.channel.k8s.io' \
      "https://127.0.0.1:$SY_HOST_PORT$hp"
  expect "port-forward: a WebSocket of another subprotocol is refused" \
    'port-forward over WebSocket needs the subprotocol SPDY/3.1\+portforward.k8s.io, v4.channel.k8s.io or v4.base64.channel.k8s.io' \
    pf_hcurl -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
      -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' \
      "https://127.0.0.1:$SY_HOST_PORT$hp?ports=80"
  # junk after the upgrade ends that session only
  python3 - "$SY_HOST_PORT" "$E2E_TMP/syhost" "$hp" >"$E2E_TMP/pfjunk.out" 2>&1 <<'PY'
import socket, ssl, sys
port, d, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
           "X-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n" % path).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
s.sendall(b"\x80\x02\x00\x01" + b"\x00" * 60)
rest = b""
while True:
    d = s.recv(100)
    if not d:
        break
    rest += d
print(head.split(b"\r\n")[0].decode(), "goaway" if rest[:4] == b"\x80\x03\x00\x07" else rest[:8].hex())
PY
  expect "port-forward: junk after the upgrade gets GOAWAY and the end of that connection" \
    '^HTTP/1.1 101 Switching Protocols goaway$' cat "$E2E_TMP/pfjunk.out"
  expect "port-forward: the stand-in's server stays up" '^ok$' "${H[@]}" get --raw /readyz
  expect "port-forward: the tenant stays up" '^ok$' "${T[@]}" get --raw /readyz
  kill "$echo_pid" 2>/dev/null; wait "$echo_pid" 2>/dev/null
  "${T[@]}" delete pod pf --wait=false >/dev/null
}

# kubectl exec up to 1.29 speaks v4.channel.k8s.io over SPDY: through the
# tenant's pipe to the stand-in, which answers it as a kubelet does.
syncer_suite_exec_spdy() {
  local k27=$GSDK/kubectl.1.27 k29=$GSDK/kubectl.1.29 f=$E2E_TMP/spdyexec T=(kubectl --kubeconfig "$T_t1_KCFG")
  [ -x "$k27" ] || { fail "exec over SPDY: kubectl.1.27 is not installed in $GSDK"; return; }
  "${T[@]}" run sx --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/sx --timeout=20s >/dev/null
  expect_eq "exec over SPDY (1.27): stdout of the command" "hello spdy" \
    "$k27" --kubeconfig "$T_t1_KCFG" exec sx -- echo hello spdy
  [ -x "$k29" ] && expect_eq "exec over SPDY (1.29): stdout of the command" "hello 1.29" \
    "$k29" --kubeconfig "$T_t1_KCFG" exec sx -- echo hello 1.29
  expect_rc "exec over SPDY: the exit code comes back in the Status" 3 'command terminated with exit code 3' \
    "$k27" --kubeconfig "$T_t1_KCFG" exec sx -- sh -c 'exit 3'
  "$k27" --kubeconfig "$T_t1_KCFG" exec sx -- sh -c 'echo to-out; echo to-err >&2' >"$f" 2>"$f.err"
  expect_eq "exec over SPDY: stdout and stderr on their own streams" "to-out|to-err" \
    sh -c "printf '%s|%s' \"\$(cat $f)\" \"\$(cat $f.err)\""
  head -c 2000000 /dev/urandom >"$f.in"
  expect_eq "exec -i over SPDY: 2 MB of stdin, byte for byte, and its end" \
    "$(sha256sum <"$f.in" | cut -c1-64)" \
    sh -c "$k27 --kubeconfig $T_t1_KCFG exec -i sx -- sha256sum <$f.in | cut -c1-64"
  expect_eq "exec over SPDY: 3 MB of output, whole" "3000000" \
    sh -c "$k27 --kubeconfig $T_t1_KCFG exec sx -- head -c 3000000 /dev/zero | wc -c"
  expect_fail "exec over SPDY: a command not found" 'executable file not found' \
    "$k27" --kubeconfig "$T_t1_KCFG" exec sx -- /no/such/cmd
  # (the terminal starts at 0 0: the command waits for the resize to land)
  expect "exec -t over SPDY: a terminal, its size from the resize stream" '^(\^@)?7 91' \
    script -qec "stty rows 7 cols 91; $k27 --kubeconfig $T_t1_KCFG exec -it sx -- sh -c 'i=0; while [ \"\$(stty size)\" = \"0 0\" ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done; stty size'" /dev/null
  # protocol errors on the stand-in
  local hp=/api/v1/namespaces/tenants/pods/sx-x-default-x-t1/exec
  expect "exec over SPDY: a client without v4.channel.k8s.io is refused as the kubelet does" \
    'unable to negotiate protocol: client supports channel.k8s.io, server supports v4.channel.k8s.io' \
    pf_hcurl -X POST -H 'Connection: Upgrade' -H 'Upgrade: SPDY/3.1' -H 'X-Stream-Protocol-Version: channel.k8s.io' \
      "https://127.0.0.1:$SY_HOST_PORT$hp?command=true&stdout=true&container=sx"
  expect "exec over SPDY: the stand-in's server stays up" '^ok$' \
    kubectl --kubeconfig "$SY_HOST_KCFG" get --raw /readyz
  "${T[@]}" delete pod sx --wait=false >/dev/null
}

# A tenant stopped while sessions pass through it: an exec (WebSocket), an
# exec over SPDY and a port-forward connection are open; SIGTERM ends them,
# the server exits cleanly (its log, under ASan, is checked at the end) and
# the clients return.
syncer_suite_stop_with_sessions() {
  sy_start_tenant t9 team-a || { fail "stop with sessions: tenant t9"; return; }
  local T=(kubectl --kubeconfig "$T_t9_KCFG") pid=$T_t9_PID e1 e2 pf port lp rc echo_pid
  "${T[@]}" run held --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/held --timeout=20s >/dev/null
  # cat reads its stdin, then a file of this run: the host's processes of
  # this check are told from those of another run on the machine by it
  local mark=$E2E_TMP/held-mark
  : >"$mark"
  timeout 30 "${T[@]}" exec -i held -- cat - "$mark" < <(sleep 60) >/dev/null 2>&1 & e1=$!
  if [ -x "$GSDK/kubectl.1.27" ]; then
    timeout 30 "$GSDK/kubectl.1.27" --kubeconfig "$T_t9_KCFG" exec -i held -- cat - "$mark" < <(sleep 60) \
      >/dev/null 2>&1 & e2=$!
  fi
  python3 "$PF_HERE/pfecho.py" serve "$E2E_TMP/pfecho9.port" & echo_pid=$!
  for _ in $(seq 50); do [ -s "$E2E_TMP/pfecho9.port" ] && break; sleep 0.1; done
  port=$(cat "$E2E_TMP/pfecho9.port" 2>/dev/null)
  lp=$(pf_free_port)
  if [ -n "$port" ] && pf_start "$T_t9_KCFG" kubectl pod/held "$lp:$port"; then
    python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(b"x"); s.recv(1); time.sleep(30)' "$lp" >/dev/null 2>&1 &
    pf=$!
  fi
  expect_until "stop with sessions: two exec sessions are open on the host" "2" \
    sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " 2>/dev/null <"$f"; echo; done | grep -cxF "cat - $1 "' sh "$mark"
  kill -TERM "$pid"
  rc=0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then rc=1; fi
  expect_eq "stop with sessions: the tenant exits within 10 s of SIGTERM" 0 echo "$rc"
  wait "$pid" 2>/dev/null; rc=$?
  expect_eq "stop with sessions: cleanly (exit code 0)" 0 echo "$rc"
  local start=$SECONDS
  wait "$e1" ${e2:+"$e2"} 2>/dev/null
  expect "stop with sessions: the exec clients return at once" '^[0-5]$' echo $((SECONDS - start))
  [ -n "${pf:-}" ] && kill "$pf" 2>/dev/null
  pf_stop
  kill "$echo_pid" 2>/dev/null; wait "$echo_pid" 2>/dev/null
}
