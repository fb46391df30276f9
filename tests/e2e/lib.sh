# SPDX-License-Identifier: Apache-2.0
# Helpers for the end-to-end tests: start the real kubicle binary on
# 127.0.0.1 with a fresh data dir, drive it with real kubectl, count results.
# Sourced by tests/e2e/run.sh; expects $KUBICLE (the binary) and
# $KUBICLE_STANDIN (the host stand-in, tests/host) to be set.

E2E_PASS=0
E2E_FAIL=0
E2E_TMP=$(mktemp -d /tmp/kubicle-e2e.XXXXXX)
E2E_PIDS=()

e2e_cleanup() {
  for p in "${E2E_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ "${E2E_KEEP:-0}" = 1 ] || rm -rf "$E2E_TMP"
}
trap e2e_cleanup EXIT

# kube-apiserver indents JSON for a User-Agent starting with "curl" (as the
# server does: core/status.c want_pretty); the suites match compact JSON in
# curl's output, so their curl says it is something else (the fidelity
# suite passes -A curl/... where it checks the indentation).
export CURL_HOME=$E2E_TMP
echo 'user-agent = "kubicle-e2e-curl"' >"$CURL_HOME/.curlrc"

# The machine's `kubectl` (Google Cloud SDK's) is a dispatcher: on each call
# it GETs the server's /version over a TLS connection of its own, then execs
# kubectl.1.NN for the server's minor (1.33 for kubicle). That is a second Go
# program's start and a second handshake per call, and the suites' kubectl
# calls are most of their CPU. So the suites' `kubectl` is, through PATH,
# the binary the dispatcher would exec; the kubectl suite and the syncer's
# port-forward checks (t_spdy.sh) drive the dispatcher itself
# ($E2E_KUBECTL_DISPATCHER) to keep that path tested. E2E_KUBECTL_DIRECT=0:
# every suite through the dispatcher.
E2E_KUBECTL_DISPATCHER=$(command -v kubectl)
if [ -x /usr/lib/google-cloud-sdk/bin/kubectl.1.33 ] && [ "${E2E_KUBECTL_DIRECT:-1}" = 1 ]; then
  mkdir -p "$E2E_TMP/bin"
  ln -s /usr/lib/google-cloud-sdk/bin/kubectl.1.33 "$E2E_TMP/bin/kubectl"
  export PATH=$E2E_TMP/bin:$PATH
fi

pass() { E2E_PASS=$((E2E_PASS + 1)); echo "ok   $*"; }
fail() { E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL $*"; }

# start_webhook_server DIR [SAN...]: tests/e2e/webhook_server.py on a free
# port of 127.0.0.1 with a new self-signed certificate (IP:127.0.0.1 and the
# extra SANs, e.g. DNS:whs.wh.svc), its files in DIR (reviews.log: every
# AdmissionReview); sets WH_URL and WH_CA (the caBundle).
start_webhook_server() {
  local d=$1 i san=IP:127.0.0.1 s
  shift
  for s in "$@"; do san="$san,$s"; done
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=webhook" -addext "subjectAltName=$san" \
    -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
  python3 "$E2E_LIB_DIR/webhook_server.py" "$d/cert.pem" "$d/key.pem" "$d/port" "$d/reviews.log" \
    >>"$d/server.log" 2>&1 &
  E2E_PIDS+=("$!")
  for i in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.05; done
  WH_URL="https://127.0.0.1:$(cat "$d/port")"
  WH_CA=$(base64 -w0 "$d/cert.pem")
}

# start_server NAME [extra args...]: starts kubicle serve on a free port with
# data dir $E2E_TMP/NAME; sets SERVER_PID, KCFG, SERVER_URL. With
# --standin-exec among the args, the host stand-in instead ($KUBICLE_STANDIN:
# the same flags, plus a kubelet's log, exec and port-forward and KAI's Queue).
# The suites' webhook, conversion and APIService servers listen on
# 127.0.0.1, which the egress policy refuses (docs/egress.md): every server
# gets --egress-allow $E2E_EGRESS_ALLOW (default 127.0.0.1/32; empty: none,
# as the ssrf suite wants).
start_server() {
  local name=$1; shift
  local dir=$E2E_TMP/$name a cmd=("$KUBICLE" serve) args=()
  local egress=${E2E_EGRESS_ALLOW-127.0.0.1/32}
  for a in "$@"; do
    if [ "$a" = --standin-exec ]; then cmd=("${KUBICLE_STANDIN:?no host stand-in}")
    else args+=("$a"); fi
  done
  [ -n "$egress" ] && args+=(--egress-allow "$egress")
  rm -f "$dir/kubeconfig"
  "${cmd[@]}" --data-dir "$dir" --listen 127.0.0.1:${E2E_PORT:-0} ${args[@]+"${args[@]}"} \
    >>"$E2E_TMP/$name.log" 2>&1 &
  SERVER_PID=$!
  E2E_PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 600); do
    [ -s "$dir/kubeconfig" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  KCFG=$dir/kubeconfig
  SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG" 2>/dev/null)
  DATA_DIR=$dir
  [ -n "$SERVER_URL" ] || { echo "server $name did not start:"; cat "$E2E_TMP/$name.log"; return 1; }
}

# start_scheduler NAME [ARGS...]: the test scheduler (tests/host/scheduler.py,
# KAI-like; ARGS e.g. --metrics) against the host stand-in started as NAME;
# logs to NAME-scheduler.log, sets SCHED_PID.
E2E_LIB_DIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
start_scheduler() {
  local name=$1; shift
  python3 "$E2E_LIB_DIR/../host/scheduler.py" --data-dir "$E2E_TMP/$name" --interval 0.1 "$@" \
    >>"$E2E_TMP/$name-scheduler.log" 2>&1 &
  SCHED_PID=$!
  E2E_PIDS+=("$SCHED_PID")
}

stop_server() { # signal
  kill -"${1:-TERM}" "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  return 0
}

# curl with the admin client certificate
kcurl() {
  curl -sS --cacert "$DATA_DIR/ca.crt" --cert "$DATA_DIR/admin.crt" --key "$DATA_DIR/admin.key" "$@"
}

# expect DESC PATTERN CMD...: runs CMD, passes when its output (stdout+stderr)
# matches the extended regex PATTERN and it exits 0.
expect() {
  local desc=$1 pat=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] && grep -Eq -- "$pat" <<<"$out"; then pass "$desc"
  else fail "$desc (rc=$rc): wanted /$pat/, got: $(head -c 600 <<<"$out")"; fi
}

# expect_fail DESC PATTERN CMD...: CMD must exit non-zero with PATTERN in its output.
expect_fail() {
  local desc=$1 pat=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -Eq -- "$pat" <<<"$out"; then pass "$desc"
  else fail "$desc (rc=$rc): wanted failure /$pat/, got: $(head -c 600 <<<"$out")"; fi
}

# expect_eq DESC WANT CMD...: the trimmed output equals WANT.
expect_eq() {
  local desc=$1 want=$2; shift 2
  local out
  out=$("$@" 2>&1)
  if [ "$out" = "$want" ]; then pass "$desc"
  else fail "$desc: wanted '$want', got '$(head -c 600 <<<"$out")'"; fi
}

# expect_rc DESC RC PATTERN CMD...: CMD exits with RC and prints PATTERN.
expect_rc() {
  local desc=$1 want=$2 pat=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq "$want" ] && grep -Eq -- "$pat" <<<"$out"; then pass "$desc"
  else fail "$desc (rc=$rc, wanted $want): wanted /$pat/, got: $(head -c 600 <<<"$out")"; fi
}

# e2e_nap T0: the pause between two polls of a wait that began at $SECONDS
# T0: 0.1 s for its first 2 seconds, 0.25 s until 10, then 0.5 s. Most
# waits end within a second; the long ones (leases, resyncs, timers) would
# otherwise start a kubectl (~0.1 s of CPU) ten times a second for their
# whole length, and the shards side by side share 2 cores.
e2e_nap() {
  local t=$((SECONDS - $1))
  if [ $t -lt 2 ]; then sleep 0.1
  elif [ $t -lt 10 ]; then sleep 0.25
  else sleep 0.5; fi
}

# expect_until DESC WANT CMD...: polls CMD (e2e_nap, up to $E2E_UNTIL
# seconds, 30) until its output is WANT.
expect_until() {
  local desc=$1 want=$2 out t0=$SECONDS; shift 2
  local end=$((SECONDS + ${E2E_UNTIL:-30}))
  while :; do
    out=$("$@" 2>&1)
    [ "$out" = "$want" ] && { pass "$desc"; return 0; }
    [ $SECONDS -ge $end ] && break
    e2e_nap $t0
  done
  fail "$desc: wanted '$want', got '$(head -c 300 <<<"$out")'"
  return 1
}

# wait_for DESC TIMEOUT CMD...: polls CMD (e2e_nap) until it exits 0;
# on timeout, fails DESC with CMD's last output. No pass is counted: it
# stands for a wait, not a check. Returns CMD's success.
wait_for() {
  local desc=$1 t=$2 out t0=$SECONDS; shift 2
  local end=$((SECONDS + t))
  while :; do
    out=$("$@" 2>&1) && return 0
    [ $SECONDS -ge $end ] && break
    e2e_nap $t0
  done
  fail "$desc: timed out after ${t}s waiting for: $* (last output: $(head -c 300 <<<"$out"))"
  return 1
}

# out_is WANT CMD...: whether CMD prints WANT (to poll with wait_for,
# sy_until...: `sy_until 5 test "$(CMD)" = X` would read CMD once only).
out_is() { local want=$1; shift; [ "$("$@" 2>/dev/null)" = "$want" ]; }

# expect_until_match DESC TIMEOUT PATTERN CMD...: polls CMD until it exits 0
# with PATTERN in its output (expect, for state that settles asynchronously).
expect_until_match() {
  local desc=$1 t=$2 pat=$3 out rc t0=$SECONDS; shift 3
  local end=$((SECONDS + t))
  while :; do
    out=$("$@" 2>&1); rc=$?
    [ $rc -eq 0 ] && grep -Eq -- "$pat" <<<"$out" && { pass "$desc"; return 0; }
    [ $SECONDS -ge $end ] && break
    e2e_nap $t0
  done
  fail "$desc (rc=$rc, after ${t}s): wanted /$pat/, got: $(head -c 600 <<<"$out")"
  return 1
}

e2e_summary() {
  # Stop every server cleanly, then look for sanitizer reports (ASan builds
  # report leaks at exit) in all their logs.
  local p
  for p in "${E2E_PIDS[@]:-}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
  for p in "${E2E_PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
  E2E_PIDS=()
  local bad
  bad=$(grep -l -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$E2E_TMP"/*.log 2>/dev/null)
  if [ -n "$bad" ]; then
    fail "sanitizer reports in: $bad"
    grep -h -A12 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' $bad | head -60
  else
    pass "no sanitizer report in any server log"
  fi
  echo "$E2E_PASS passed, $E2E_FAIL failed"
  [ "$E2E_FAIL" -eq 0 ]
}

# e2e_time_suite NAME CMD...: runs CMD (a suite) and appends
# "NAME SECONDS PASSED FAILED" to $E2E_TIMES.
e2e_time_suite() {
  local name=$1 t0=$EPOCHREALTIME p0=$E2E_PASS f0=$E2E_FAIL; shift
  echo "=== suite $name"
  "$@"
  local t1=$EPOCHREALTIME
  awk -v n="$name" -v a="$t0" -v b="$t1" -v p=$((E2E_PASS - p0)) -v f=$((E2E_FAIL - f0)) \
    'BEGIN { printf "%s %.1f %d %d\n", n, b - a, p, f }' >>"${E2E_TIMES:-/dev/null}"
}

# e2e_times_table FILE...: the suites' times, slowest first (times.sh).
e2e_times_table() { "$E2E_LIB_DIR/times.sh" "$@"; }
