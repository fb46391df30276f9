# SPDX-License-Identifier: Apache-2.0
# The GPU allocation ledger (docs/finops.md): a synthetic host history
# (tests/host/history.py plays the host's scheduler and kubelet, with chosen
# timestamps) of pods of every sharing mode, pods that never ran, a pod whose
# host pod is deleted while its tenant server is killed, nodes added and
# removed mid-window; `kubicle usage` must report what the test computes
# independently from the history it wrote, to the second, as JSON and CSV.

FO_HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")

fo_hist() { python3 "$FO_HERE/../host/history.py" --data-dir "$E2E_TMP/fohost" "$@"; }
fo_k() { local t=$1; shift; kubectl --kubeconfig "$KUBICLE_HOME/tenants/$t/kubeconfig" "$@"; }
fo_usage() { "$KUBICLE" usage "$@"; }

# fo_tenant NAME: a tenant server syncing to the stand-in, its data dir
# under KUBICLE_HOME (where `kubicle usage` reads its ledger)
fo_tenant() {
  E2E_PORT=0 start_server "fohome/tenants/$1" --host-kubeconfig "$FO_HOST_KCFG" \
    --host-namespace tenants --tenant "$1" --queue "q-$1" --floor privileged || return 1
  printf -v "FO_PID_$1" %s "$SERVER_PID"
}

# fo_pod TENANT NS NAME RESOURCES-JSON [ANNOTATIONS-JSON]
fo_pod() {
  fo_k "$1" create ns "$2" >/dev/null 2>&1
  fo_k "$1" apply -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$3", "namespace": "$2", "annotations": ${5:-{\}}},
 "spec": {"containers": [{"name": "c", "image": "busybox", "resources": $4}]}}
EOF
}

fo_wait_host() { fo_hist wait tenants "$1-x-$2-x-$3"; } # tenant ns pod

# fo_json FILE EXPR: a python expression over the JSON in FILE (as j)
fo_json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

fo_g1() { # since: g1's GPU-seconds until now
  "$KUBICLE" usage fb --since "$(date -u -d @"$1" +%FT%TZ)" --until now --by pod -o json |
    python3 -c 'import json,sys; print([i["gpuSeconds"] for i in json.load(sys.stdin)["items"] if i["pod"] == "g1"])'
}
fo_g1_closed() { local a; a=$(fo_g1 "$1"); sleep 2.1; [ "$a" = "$(fo_g1 "$1")" ] && [ "$a" != "[]" ]; }

finops_suite() {
  export KUBICLE_HOME=$E2E_TMP/fohome
  mkdir -p "$KUBICLE_HOME/tenants"
  E2E_PORT=0 start_server fohost --standin-exec || return 1
  FO_HOST_KCFG=$KCFG
  kubectl --kubeconfig "$FO_HOST_KCFG" create ns tenants >/dev/null
  fo_hist setup

  # nodes: whole GPUs (H100, 80 GB), MIG (A100 with 1g.10gb slices), time-sliced (L4 x4)
  local n1 n2 n3 n5 n6 n7
  n1=$(fo_hist node n-h100 --product NVIDIA-H100-80GB-HBM3 --count 8 --memory 80000 \
    --alloc nvidia.com/gpu=8) || { fail "node n-h100"; return 1; }
  n2=$(fo_hist node n-a100 --product NVIDIA-A100-SXM4-80GB --count 2 \
    --alloc nvidia.com/mig-1g.10gb=14) || { fail "node n-a100"; return 1; }
  n3=$(fo_hist node n-l4 --product NVIDIA-L4 --count 1 --memory 23034 --replicas 4 \
    --alloc nvidia.com/gpu=4) || { fail "node n-l4"; return 1; }
  # fc's many pods get nodes of their own, large enough that the history
  # never holds more than a node has (as a real scheduler would not)
  n5=$(fo_hist node n-bulk --product NVIDIA-H100-80GB-HBM3 --count 512 --memory 80000 \
    --alloc nvidia.com/gpu=512) || { fail "node n-bulk"; return 1; }
  n6=$(fo_hist node n-bulk-mig --product NVIDIA-A100-SXM4-80GB --count 64 \
    --alloc nvidia.com/mig-1g.10gb=448) || { fail "node n-bulk-mig"; return 1; }
  n7=$(fo_hist node n-bulk-l4 --product NVIDIA-L4 --count 64 --memory 23034 --replicas 4 \
    --alloc nvidia.com/gpu=256) || { fail "node n-bulk-l4"; return 1; }
  local c1 c2 c3 c5 c6 c7
  c1=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n1")
  c2=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n2")
  c3=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n3")
  c5=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n5")
  c6=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n6")
  c7=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n7")
  local T0=$((c7 + 1))

  fo_tenant fa || return 1
  fo_tenant fb || return 1
  fo_tenant fc || return 1
  # fc: FO_BULK pods of random sharing modes and times (seeded), the
  # expected seconds of each computed here from the plan alone
  python3 - "$E2E_TMP" "$T0" "${FO_BULK:-2000}" <<'EOF'
import json, random, sys
tmp, T0, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(25)
pods, plan, want = [], [], {}
modes = [  # resources, annotations, node, share
    ({"nvidia.com/gpu": "1"}, {}, "n-bulk", 1.0),
    ({"nvidia.com/gpu": "2"}, {}, "n-bulk", 2.0),
    ({}, {"gpu-fraction": "0.25"}, "n-bulk", 0.25),
    ({}, {"gpu-memory": "40000"}, "n-bulk", 0.5),
    ({"nvidia.com/gpumem": "16000", "nvidia.com/gpucores": "10"}, {}, "n-bulk", 0.2),
    ({"nvidia.com/mig-1g.10gb": "1"}, {}, "n-bulk-mig", 1 / 7),
    ({"nvidia.com/gpu": "2"}, {}, "n-bulk-l4", 0.5),
]
for i in range(n):
    res, ann, node, share = modes[i % len(modes)]
    name = f"b{i}"
    pods.append({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": "bulk", "annotations": ann},
                 "spec": {"containers": [{"name": "c", "image": "busybox",
                                          "resources": {"limits": res}}]}})
    r = rnd.random()
    if r < 0.1:
        continue                      # never bound: holds nothing
    at = T0 + 1 + rnd.randrange(10)
    finish = None if r < 0.2 else at + 1 + rnd.randrange(3)
    plan.append({"ns": "tenants", "pod": f"{name}-x-bulk-x-fc", "node": node, "at": at,
                 "finish": finish, "failed": r > 0.9})
    want[f"fc/bulk/{name}"] = [share, at, finish]
json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, open(f"{tmp}/fo-bulk.json", "w"))
json.dump(plan, open(f"{tmp}/fo-plan.json", "w"))
json.dump(want, open(f"{tmp}/fo-bulk-want.json", "w"))
EOF
  fo_k fc create ns bulk >/dev/null
  fo_k fc apply -f "$E2E_TMP/fo-bulk.json" >/dev/null || fail "fc's pods"
  fo_pod fa train w1 '{"limits": {"nvidia.com/gpu": "2"}}'
  fo_pod fa train m1 '{"limits": {"nvidia.com/mig-1g.10gb": "2"}}'
  fo_pod fa infer k1 '{}' '{"gpu-fraction": "0.5"}'
  fo_pod fa infer k2 '{}' '{"gpu-memory": "20000"}'
  fo_pod fa infer h1 '{"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000", "nvidia.com/gpucores": "30"}}'
  fo_pod fa infer s1 '{"limits": {"nvidia.com/gpu": "1"}}'
  fo_pod fa infer u1 '{"limits": {"nvidia.com/gpu": "8"}}'
  fo_pod fa train l1 '{"limits": {"nvidia.com/gpu": "4"}}'
  fo_pod fa infer d1 '{"limits": {"nvidia.com/gpu": "1"}}'
  fo_pod fb default w2 '{"limits": {"nvidia.com/gpu": "1"}}'
  fo_pod fb gone g1 '{"limits": {"nvidia.com/gpu": "1"}}'
  local p
  for p in "fa train w1" "fa train m1" "fa infer k1" "fa infer k2" "fa infer h1" "fa infer s1" \
    "fa infer u1" "fa train l1" "fa infer d1" "fb default w2" "fb gone g1"; do
    set -- $p
    fo_wait_host "$3" "$2" "$1" || { fail "host pod of $p"; return 1; }
  done
  H() { echo "$3-x-$2-x-$1"; }
  # the history (seconds after T0): what each pod held and when
  fo_hist bind tenants "$(H fa train w1)" n-h100 --at $((T0 + 1))
  fo_hist finish tenants "$(H fa train w1)" --at $((T0 + 6))
  fo_hist bind tenants "$(H fa train m1)" n-a100 --at $((T0 + 2))
  fo_hist bind tenants "$(H fa infer k1)" n-h100 --at $((T0 + 3))
  fo_hist finish tenants "$(H fa infer k1)" --at $((T0 + 7)) --failed
  fo_hist bind tenants "$(H fa infer k2)" n-h100 --at $((T0 + 2))
  fo_hist finish tenants "$(H fa infer k2)" --at $((T0 + 10))
  fo_hist bind tenants "$(H fa infer h1)" n-h100 --at $((T0 + 4))
  fo_hist finish tenants "$(H fa infer h1)" --at $((T0 + 9))
  fo_hist bind tenants "$(H fa infer s1)" n-l4 --at $((T0 + 2))
  fo_hist finish tenants "$(H fa infer s1)" --at $((T0 + 12))
  fo_hist unschedulable tenants "$(H fa infer u1)"
  fo_hist bind tenants "$(H fb default w2)" n-h100 --at $((T0 + 2))
  fo_hist bind tenants "$(H fb gone g1)" n-h100 --at $((T0 + 3))
  # d1 is deleted on the host before it finished: held until the deletion
  fo_hist bind tenants "$(H fa infer d1)" n-h100 --at $((T0 + 1))
  fo_hist delete tenants "$(H fa infer d1)" --grace 1 >/dev/null
  local d1
  sleep 2.2
  d1=$(fo_hist delete tenants "$(H fa infer d1)" --grace 0) || { fail "delete d1"; return 1; }
  d1=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["deletionTimestamp"])' "$d1")

  fo_hist bulk "$E2E_TMP/fo-plan.json" || fail "fc's history"
  # a node added mid-window and removed again, l1 running on it meanwhile
  local n4 c4 d4
  n4=$(fo_hist node n-late --product NVIDIA-H100-80GB-HBM3 --count 4 --memory 80000 \
    --alloc nvidia.com/gpu=4) || { fail "node n-late"; return 1; }
  c4=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["created"])' "$n4")
  fo_hist bind tenants "$(H fa train l1)" n-late --at $((c4 + 1))
  fo_hist finish tenants "$(H fa train l1)" --at $((c4 + 3))
  expect_until_match "the tenant pod follows its host pod's status" 30 Succeeded \
    fo_k fa -n train get pod l1 -o 'jsonpath={.status.phase}'
  while [ "$(date +%s)" -le $((c4 + 3)) ]; do sleep 0.2; done
  d4=$(fo_hist node-delete n-late) || { fail "delete n-late"; return 1; }
  d4=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["deleted"])' "$d4")

  # g1's host pod goes while fb's server is down: closed at the relist
  wait_for "g1's interval recorded" 30 bash -c \
    "'$KUBICLE' usage fb --since $(date -u -d @"$c1" +%FT%TZ) --by pod -o json | grep -q '\"pod\": \"g1\"'"
  local killed=$(date +%s) back
  kill -9 "$FO_PID_fb"; wait "$FO_PID_fb" 2>/dev/null
  fo_usage --by pod --since "$(date -u -d @"$c1" +%FT%TZ)" --until "$(date -u -d @$((T0 + 14)) +%FT%TZ)" \
    -o json >"$E2E_TMP/fo-before.json"
  fo_hist delete tenants "$(H fb gone g1)" --grace 0 >/dev/null
  fo_tenant fb || return 1
  # closed once the restarted syncer listed the host: its figure stops growing
  wait_for "fb's syncer closed g1 at its relist" 60 fo_g1_closed "$c1"
  back=$(date +%s)

  # the window: from the first node until after everything above
  local U=$(($(date +%s) + 1))
  [ $U -gt $((T0 + 14)) ] || U=$((T0 + 14))
  while [ "$(date +%s)" -le $U ]; do sleep 0.2; done
  local since until
  since=$(date -u -d @"$c1" +%FT%TZ)
  until=$(date -u -d @"$U" +%FT%TZ)
  fo_usage --by pod --since "$since" --until "$until" -o json >"$E2E_TMP/fo-pod.json"
  fo_usage --by pod --since "$since" --until "$until" -o csv >"$E2E_TMP/fo-pod.csv"
  fo_usage --by namespace --since "$since" --until "$until" -o json >"$E2E_TMP/fo-ns.json"
  fo_usage --by node --since "$since" --until "$until" -o json >"$E2E_TMP/fo-node.json"
  fo_usage --since "$since" --until "$until" -o json >"$E2E_TMP/fo-tenant.json"

  # expected, from the history alone
  python3 - "$E2E_TMP" "$T0" "$U" "$c1" "$c2" "$c3" "$c4" "$d4" "$killed" "$back" "$d1" "$c5" "$c6" "$c7" <<'EOF' >"$E2E_TMP/fo-check.txt" 2>&1
import csv, json, sys
tmp, T0, U, c1, c2, c3, c4, d4, killed, back, d1, c5, c6, c7 = sys.argv[1], *map(int, sys.argv[2:])
pod = json.load(open(f"{tmp}/fo-pod.json"))
got = {i["key"]: i["gpuSeconds"] for i in pod["items"]}
want = {
    "fa/train/w1": 2 * 5,                     # 2 whole GPUs, 5 s
    "fa/train/m1": 2 * 1 / 7 * (U - (T0 + 2)),  # 2 x 1g of 7 slices, still running
    "fa/infer/k1": 0.5 * 4,                   # KAI gpu-fraction 0.5, failed after 4 s
    "fa/infer/k2": 20000 / 80000 * 8,         # KAI gpu-memory over the node's memory
    "fa/infer/h1": max(20000 / 80000, 30 / 100) * 5,  # HAMi: the larger share
    "fa/infer/s1": 1 / 4 * 10,                # time-sliced, 4 replicas
    "fa/train/l1": 4 * 2,                     # on the node added mid-window
    "fa/infer/d1": 1 * (d1 - (T0 + 1)),       # deleted on the host: its deletionTimestamp
    "fb/default/w2": 1 * (U - (T0 + 2)),
}
bad = []
for k, v in want.items():
    if abs(got.get(k, -1) - v) > 1e-3:
        bad.append(f"{k}: got {got.get(k)}, want {v}")
if "fa/infer/u1" in got:
    bad.append("u1 never ran but is charged")
g1 = got.get("fb/gone/g1")
lo, hi = killed - (T0 + 3), back - (T0 + 3)
if g1 is None or not (lo <= g1 <= hi):
    bad.append(f"g1 (deleted while its server was down): {g1} not in [{lo}, {hi}]")
bulk = json.load(open(f"{tmp}/fo-bulk-want.json"))
nb = 0
for k, (share, at, finish) in bulk.items():
    v = share * ((finish or U) - at)
    nb += v
    if abs(got.get(k, -1) - v) > 1e-3:
        bad.append(f"{k}: got {got.get(k)}, want {v}")
fc = [k for k in got if k.startswith("fc/")]
if len(fc) != len(bulk):
    bad.append(f"fc: {len(fc)} pods charged, {len(bulk)} held GPUs")
cap = 8 * (U - c1) + 2 * (U - c2) + 1 * (U - c3) + 4 * (d4 - c4) + 512 * (U - c5) + \
    64 * (U - c6) + 64 * (U - c7)
if abs(pod["capacityGpuSeconds"] - cap) > 1e-3:
    bad.append(f"capacity {pod['capacityGpuSeconds']}, want {cap}")
alloc = sum(want.values()) + (g1 or 0) + nb
if abs(pod["allocatedGpuSeconds"] - alloc) > 1e-3:
    bad.append(f"allocated {pod['allocatedGpuSeconds']}, want {alloc}")
if abs(pod["allocatedGpuSeconds"] + pod["idle"]["gpuSeconds"] - pod["capacityGpuSeconds"]) > 1e-6:
    bad.append("allocated + idle != capacity x time")
models = {m["model"]: m for m in pod["models"]}
h100 = 8 * (U - c1) + 4 * (d4 - c4) + 512 * (U - c5)
if abs(models["NVIDIA-H100-80GB-HBM3"]["capacityGpuSeconds"] - h100) > 1e-3:
    bad.append(f"H100 capacity {models['NVIDIA-H100-80GB-HBM3']}, want {h100}")
rows = list(csv.DictReader(open(f"{tmp}/fo-pod.csv")))
cs = {r["pod"]: float(r["gpu_seconds"]) for r in rows}
for k, v in got.items():
    if abs(cs.get(k, -1) - v) > 1e-3:
        bad.append(f"csv {k}: {cs.get(k)} vs json {v}")
if abs(cs.get("(idle)", -1) - pod["idle"]["gpuSeconds"]) > 1e-3:
    bad.append("csv idle row")
ns = {i["key"]: i["gpuSeconds"] for i in json.load(open(f"{tmp}/fo-ns.json"))["items"]}
for n in ("fa/train", "fa/infer"):
    s = sum(v for k, v in want.items() if k.startswith(n + "/"))
    if abs(ns.get(n, -1) - s) > 1e-3:
        bad.append(f"namespace {n}: {ns.get(n)}, want {s}")
node = {i["key"]: i for i in json.load(open(f"{tmp}/fo-node.json"))["items"]}
late = node.get("n-late", {})
if abs(late.get("capacityGpuSeconds", -1) - 4 * (d4 - c4)) > 1e-3 or \
        abs(late.get("idleGpuSeconds", -1) - (4 * (d4 - c4) - 8)) > 1e-3:
    bad.append(f"node n-late: {late}")
ten = {i["key"]: i["gpuSeconds"] for i in json.load(open(f"{tmp}/fo-tenant.json"))["items"]}
fa = sum(v for k, v in want.items() if k.startswith("fa/"))
if abs(ten.get("fa", -1) - fa) > 1e-3:
    bad.append(f"tenant fa: {ten.get('fa')}, want {fa}")
# what was closed before the kill reads the same after the restart
before = {i["key"]: i["gpuSeconds"] for i in json.load(open(f"{tmp}/fo-before.json"))["items"]}
for k in ("fa/train/w1", "fa/infer/k1", "fa/infer/k2", "fa/infer/h1", "fa/infer/s1"):
    if abs(before.get(k, -1) - got[k]) > 1e-9:
        bad.append(f"{k} changed across the restart: {before.get(k)} -> {got[k]}")
for i in json.load(open(f"{tmp}/fo-node.json"))["items"]:
    if i["idleGpuSeconds"] < -1e-6:
        bad.append(f"node {i['key']} holds more than it has: {i}")
print("\n".join(bad) if bad else "ok")
EOF
  expect_eq "ledger figures equal the history's, to the second (JSON, CSV, by pod/namespace/node/tenant)" \
    ok cat "$E2E_TMP/fo-check.txt"

  # prices and idle shared as Kubecost's shareIdle
  cat >"$E2E_TMP/prices.yaml" <<'EOF'
currency: EUR
default: 1.0
models:
  NVIDIA-H100-80GB-HBM3: 3.6
EOF
  fo_usage --since "$since" --until "$until" --prices "$E2E_TMP/prices.yaml" -o json >"$E2E_TMP/fo-cost.json"
  fo_usage --since "$since" --until "$until" --prices "$E2E_TMP/prices.yaml" --share-idle -o json \
    >"$E2E_TMP/fo-shared.json"
  expect_eq "cost: GPU-hours x the model's price, idle apart" ok python3 - "$E2E_TMP" "$T0" "$U" "$d1" <<'EOF'
import json, sys
tmp, T0, U, d1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
j = json.load(open(f"{tmp}/fo-cost.json"))
fa = {i["key"]: i for i in j["items"]}["fa"]
h100 = 2 * 5 + 0.5 * 4 + 0.25 * 8 + 0.3 * 5 + 4 * 2 + (d1 - (T0 + 1))  # fa's on H100
other = 2 / 7 * (U - (T0 + 2)) + 0.25 * 10            # A100 and L4: the default price
want = h100 / 3600 * 3.6 + other / 3600 * 1.0
s = json.load(open(f"{tmp}/fo-shared.json"))
tot = sum(i["cost"] for i in s["items"])
allc = sum(i["cost"] for i in j["items"]) + j["idle"]["cost"]
ok = abs(fa["cost"] - want) < 1e-5 and j["currency"] == "EUR" and abs(tot - allc) < 1e-4 \
    and s["idle"]["shared"] is True
print("ok" if ok else f"fa cost {fa['cost']} want {want}; shared total {tot} vs {allc}")
EOF
  expect_fail "a price file with a bad price is refused" 'models.X: a price per GPU-hour' \
    bash -c "printf 'models:\n  X: cheap\n' >$E2E_TMP/bad.yaml; '$KUBICLE' usage --prices $E2E_TMP/bad.yaml"
  expect_fail "an unknown tenant is refused" 'no tenant nosuch' fo_usage nosuch
  expect "table: one row per tenant, idle and capacity" '\(idle\)' fo_usage --since "$since" --until "$until"

  # the chart: valid SVG, one series per tenant plus idle
  fo_usage --since "$since" --until "$until" --chart "$E2E_TMP/fo.svg" >/dev/null
  expect_eq "chart: valid SVG with series fa, fb, fc, idle" "fa fb fc idle" python3 -c '
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
print(" ".join(g.get("data-series") for g in r.iter("{http://www.w3.org/2000/svg}g") if g.get("data-series")))' "$E2E_TMP/fo.svg"

  # metrics: the tenant's own allocation, by namespace, model and sharing mode
  expect "metrics: kubicle_gpu_allocated_seconds_total by namespace, model, sharing" \
    'kubicle_gpu_allocated\{namespace="train",model="NVIDIA-A100-SXM4-80GB",sharing="mig"\} 0.2857' \
    fo_k fa get --raw /metrics
  expect "metrics: the allocated seconds counter" \
    'kubicle_gpu_allocated_seconds_total\{namespace="train",model="NVIDIA-A100-SXM4-80GB",sharing="mig"\}' \
    fo_k fa get --raw /metrics
  # showback: each tenant reads its own figures with kubectl
  expect_until_match "showback: kubectl get gpuusage -A in the tenant" 60 \
    'train +gpu-usage +0\.285714 ' fo_k fa get gpuusage -A
  local month
  month=$(date -u +%Y-%m-01)
  expect_eq "showback: a namespace's GPU-hours this month are the ledger's" ok python3 -c '
import json, subprocess, sys
k, kc, u = sys.argv[1:4]
obj = json.loads(subprocess.check_output(["kubectl", "--kubeconfig", kc, "-n", "infer", "get",
                                          "gpuusage", "gpu-usage", "-o", "json"]))
rep = json.loads(subprocess.check_output([k, "usage", "fa", "--since", u, "--by", "namespace",
                                          "-o", "json"]))
want = {i["key"]: i["gpuSeconds"] for i in rep["items"]}["fa/infer"] / 3600
got = obj["usage"]["gpuHoursThisMonth"]
print("ok" if abs(got - want) < 2e-6 and obj["usage"]["gpusNow"] == 0 else f"{got} vs {want}: {obj}")
' "$KUBICLE" "$KUBICLE_HOME/tenants/fa/kubeconfig" "$month"
  expect_eq "showback: never another tenant's" "default gone" bash -c \
    "kubectl --kubeconfig $KUBICLE_HOME/tenants/fb/kubeconfig get gpuusage -A --no-headers -o custom-columns=NS:.metadata.namespace | sort | tr '\n' ' ' | sed 's/ \$//'"
  # read-only: what kube answers for a verb its storage lacks, even to the admin
  local ro='MethodNotAllowed.*the server does not allow this method on the requested resource'
  expect_fail "showback is read-only: delete refused" "$ro" fo_k fa -n infer delete gpuusage gpu-usage
  expect_fail "showback is read-only: patch refused" "$ro" \
    fo_k fa -n infer patch gpuusage gpu-usage --type merge -p '{"usage":{"gpusNow":99}}'
  expect_fail "showback is read-only: replace refused" "$ro" bash -c \
    "kubectl --kubeconfig $KUBICLE_HOME/tenants/fa/kubeconfig -n infer get gpuusage gpu-usage -o json |
     kubectl --kubeconfig $KUBICLE_HOME/tenants/fa/kubeconfig replace -f -"
  expect_fail "showback is read-only: create refused" "$ro" bash -c \
    "printf '{\"apiVersion\":\"kubicle.dev/v1\",\"kind\":\"GPUUsage\",\"metadata\":{\"name\":\"mine\",\"namespace\":\"infer\"},\"usage\":{}}' |
     kubectl --kubeconfig $KUBICLE_HOME/tenants/fa/kubeconfig create -f -"
  expect_fail "showback is read-only: deletecollection refused" "$ro" \
    fo_k fa -n infer delete gpuusage --all
  expect_eq "showback is read-only: discovery lists get, list, watch" '["get","list","watch"]' \
    bash -c "kubectl --kubeconfig $KUBICLE_HOME/tenants/fa/kubeconfig get --raw /apis/kubicle.dev/v1 |
      python3 -c 'import json,sys; print(json.dumps([r[\"verbs\"] for r in json.load(sys.stdin)[\"resources\"] if r[\"name\"] == \"gpuusages\"][0], separators=(\",\",\":\")))'"
  expect_eq "showback is read-only: the object is the ledger's still" 0 \
    fo_k fa -n infer get gpuusage gpu-usage -o 'jsonpath={.usage.gpusNow}'
  # costs inside the tenant once the platform has a price file
  expect_eq "showback: no cost without a price file" "" \
    fo_k fa -n infer get gpuusage gpu-usage -o 'jsonpath={.usage.costThisMonth}'
  cp "$E2E_TMP/prices.yaml" "$KUBICLE_HOME/prices.yaml"
  expect_until_match "showback: cost at the platform's prices ($KUBICLE_HOME/prices.yaml)" 60 \
    '^EUR$' fo_k fa -n train get gpuusage gpu-usage -o 'jsonpath={.usage.currency}'
  expect_eq "showback: a namespace's cost this month is kubicle usage's" ok python3 -c '
import json, subprocess, sys
k, kc, u = sys.argv[1:4]
for ns in ("infer",):  # closed intervals only: those of train grow each second
    obj = json.loads(subprocess.check_output(["kubectl", "--kubeconfig", kc, "-n", ns, "get",
                                              "gpuusage", "gpu-usage", "-o", "json"]))
    rep = json.loads(subprocess.check_output([k, "usage", "fa", "--since", u, "--by", "namespace",
                                              "-o", "json"]))  # the same file, by default
    want = {i["key"]: i["cost"] for i in rep["items"]}["fa/" + ns]
    got = obj["usage"]["costThisMonth"]
    if abs(got - want) > 2e-5 or want <= 0 or obj["usage"]["costToday"] > got + 1e-9:
        print(f"{ns}: {got} vs {want}: {obj}"); sys.exit()
print("ok")
' "$KUBICLE" "$KUBICLE_HOME/tenants/fa/kubeconfig" "$month"
  expect "showback: kubectl shows a Cost column" 'COST' fo_k fa get gpuusage -A
  rm -f "$KUBICLE_HOME/prices.yaml"
  echo '{"queue": "q-fa"}' >"$KUBICLE_HOME/tenants/fa/tenant.json"
  expect "list: GPU-hours this month" '"gpuHoursThisMonth": 0\.0[0-9]*[1-9]' "$KUBICLE" list fa -o json
}
