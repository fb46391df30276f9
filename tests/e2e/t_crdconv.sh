# SPDX-License-Identifier: Apache-2.0
# CRDs with a conversion webhook (spec.conversion.strategy: Webhook) end to
# end: reduced CRDs of the shapes Kueue, JobSet and LeaderWorkerSet ship
# (crdconv/*.yaml) install with kubectl apply, client- and server-side, and
# become Established; kube's validation of spec.conversion; a Python
# conversion webhook (conversion_server.py) converts what is read and
# written through a version other than the storage one (get, list, Table,
# apply, patch, server-side apply, delete, watch), with the ConversionReview kube sends; a
# failing webhook answers with kube's words.
# Sourced by run.sh.

# cv_review N EXPR: EXPR (python, on `r`, the review) of the Nth-from-last
# ConversionReview the server received
cv_review() {
  python3 - "$E2E_TMP/crdconv/reviews.log" "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
r = rows[-int(sys.argv[2])]["review"]
print(eval(sys.argv[3]))
PY
}

cv_reviews() { wc -l <"$E2E_TMP/crdconv/reviews.log"; }

# cv_crd PATH: the test CRD widgets.conv.kubicle.test (v1 stored, v2
# served), its webhook at $CV_URL$PATH
cv_crd() {
  cat <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.conv.kubicle.test}
spec:
  group: conv.kubicle.test
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      clientConfig: {url: "$CV_URL$1", caBundle: $CV_CA}
      conversionReviewVersions: [v1]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {capacity: {type: integer}, color: {type: string, default: blue}}}
YAML
}

crdconv_install() {
  local K=$1 d=$2 f
  for f in kueue-like jobset-like; do
    expect "$f CRD with a conversion webhook: kubectl apply" "created" \
      $K apply -f "$E2E_LIB_DIR/crdconv/$f.yaml"
  done
  expect "... Established" "condition met" \
    $K wait --for=condition=Established crd/clusterpools.queueing.kubicle.test crd/workersets.sets.kubicle.test --timeout=10s
  expect_eq "... the service port defaults to 443" "443" \
    $K get crd workersets.sets.kubicle.test -o 'jsonpath={.spec.conversion.webhook.clientConfig.service.port}'
  expect "... both versions served (discovery)" "clusterpools.*queueing.kubicle.test/v1beta2" \
    $K api-resources --api-group=queueing.kubicle.test -o wide
  expect "... objects through the storage version need no webhook" "clusterpool.queueing.kubicle.test/main created" \
    $K create -f - <<<'{"apiVersion":"queueing.kubicle.test/v1beta1","kind":"ClusterPool","metadata":{"name":"main"},"spec":{"cohort":"all","quota":[{"name":"gpu","nominal":8}]}}'
  expect_eq "... and read back through it" "all" \
    $K get clusterpools.v1beta1.queueing.kubicle.test main -o 'jsonpath={.spec.cohort}'
  expect_fail "... a read through the other version calls the missing Service's webhook: kube's error" \
    'conversion webhook for queueing.kubicle.test/v1beta1, Kind=ClusterPool failed: Post "https://queueing-webhook-service.queueing-system.svc:443/convert\?timeout=30s": service "queueing-webhook-service" not found' \
    $K get clusterpools.v1beta2.queueing.kubicle.test main
  expect_fail "... a delete through it too" \
    'conversion webhook for queueing.kubicle.test/v1beta1, Kind=ClusterPool failed: Post "https://queueing-webhook-service.queueing-system.svc:443/convert\?timeout=30s": service "queueing-webhook-service" not found' \
    $K delete clusterpool main
  $K delete clusterpools.v1beta1.queueing.kubicle.test main >/dev/null
  for f in kueue-like jobset-like; do
    $K delete -f "$E2E_LIB_DIR/crdconv/$f.yaml" --wait=true >/dev/null
    expect "$f CRD: kubectl apply --server-side" "serverside-applied" \
      $K apply --server-side -f "$E2E_LIB_DIR/crdconv/$f.yaml"
  done
  expect "... Established" "condition met" \
    $K wait --for=condition=Established crd/clusterpools.queueing.kubicle.test crd/workersets.sets.kubicle.test --timeout=10s
  expect "... applied again server-side: unchanged" "serverside-applied" \
    $K apply --server-side -f "$E2E_LIB_DIR/crdconv/kueue-like.yaml"
}

crdconv_validation() {
  local K=$1 d=$2
  cv_crd /convert >"$d/ok.yaml"
  sed '/clientConfig/d' "$d/ok.yaml" >"$d/bad1.yaml"
  expect_fail "Webhook without a clientConfig: kube's error" \
    'spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook' \
    $K apply -f "$d/bad1.yaml"
  sed 's/conversionReviewVersions: \[v1\]/conversionReviewVersions: [v3]/' "$d/ok.yaml" >"$d/bad2.yaml"
  expect_fail "review versions kube does not know: kube's error" \
    'spec.conversion.conversionReviewVersions: Invalid value: \[\]string\{"v3"\}: must include at least one of v1, v1beta1' \
    $K apply -f "$d/bad2.yaml"
  sed 's/conversionReviewVersions: \[v1\]/conversionReviewVersions: []/' "$d/ok.yaml" >"$d/bad3.yaml"
  expect_fail "no review versions: Required" \
    'spec.conversion.conversionReviewVersions: Required value' \
    $K apply -f "$d/bad3.yaml"
  sed 's#url: "[^"]*"#url: "http://127.0.0.1/convert"#' "$d/ok.yaml" >"$d/bad4.yaml"
  expect_fail "an http URL: kube's error" \
    "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host\[/path\]" \
    $K apply -f "$d/bad4.yaml"
  sed 's/^  scope: Namespaced/  scope: Namespaced\n  preserveUnknownFields: true/' "$d/ok.yaml" >"$d/bad5.yaml"
  expect_fail "preserveUnknownFields true: kube's error" \
    'spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true' \
    $K apply -f "$d/bad5.yaml"
  sed 's/strategy: Webhook/strategy: None/' "$d/ok.yaml" >"$d/bad6.yaml"
  expect_fail "None with a webhook: Forbidden" \
    'spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook' \
    $K apply -f "$d/bad6.yaml"
  sed 's/strategy: Webhook/strategy: Magic/' "$d/ok.yaml" >"$d/bad7.yaml"
  expect_fail "an unknown strategy: NotSupported" \
    'spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"' \
    $K apply -f "$d/bad7.yaml"

  # the caBundle as kube >= 1.31 checks it (webhook.ValidateCABundle; the
  # establishing controller): a new CRD with one that is not PEM
  # certificates is stored but not Established; an Established CRD with a
  # valid one cannot be given an invalid one
  cv_crd /convert | sed 's/widgets.conv.kubicle.test/gadgets.conv.kubicle.test/; s/kind: Widget, listKind: WidgetList, plural: widgets, singular: widget/kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget/' \
    >"$d/gadget.yaml"
  sed "s#caBundle: $CV_CA#caBundle: aGVsbG8=#" "$d/gadget.yaml" >"$d/gadget-bad.yaml"
  expect "a new CRD whose caBundle is not PEM: stored (kube allows it on create)" "created" \
    $K apply -f "$d/gadget-bad.yaml"
  expect_until "... but not Established, kube's reason and message" \
    "False InvalidCABundle The conversion webhook CABundle is invalid" \
    $K get crd gadgets.conv.kubicle.test -o 'jsonpath={.status.conditions[?(@.type=="Established")].status} {.status.conditions[?(@.type=="Established")].reason} {.status.conditions[?(@.type=="Established")].message}'
  expect_fail "... its resource is not served" "the server doesn't have a resource type" \
    $K get gadgets.conv.kubicle.test -A
  expect "a valid caBundle given: accepted" "configured" $K apply -f "$d/gadget.yaml"
  expect_until "... and the CRD is Established" "True" \
    $K get crd gadgets.conv.kubicle.test -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}'
  expect_fail "an Established CRD's valid caBundle replaced by one that is not PEM: kube's error" \
    'spec.conversion.webhookClientConfig.caBundle: Invalid value: \[\]byte\{0x68, 0x65, 0x6c, 0x6c, 0x6f\}: unable to load root certificates: unable to parse bytes as PEM block' \
    $K apply -f "$d/gadget-bad.yaml"
  $K delete crd gadgets.conv.kubicle.test >/dev/null
}

crdconv_convert() {
  local K=$1 d=$2 n
  cv_crd /convert | $K apply -f - >/dev/null
  $K wait --for=condition=Established crd/widgets.conv.kubicle.test --timeout=10s >/dev/null
  $K create ns conv >/dev/null
  printf 'apiVersion: conv.kubicle.test/v1\nkind: Widget\nmetadata: {name: w1, namespace: conv, labels: {app: x}}\nspec: {size: 3}\n' | $K apply -f - >/dev/null
  printf 'apiVersion: conv.kubicle.test/v1\nkind: Widget\nmetadata: {name: w2, namespace: conv}\nspec: {size: 5}\n' | $K apply -f - >/dev/null
  n=$(cv_reviews)
  expect_eq "reads through the storage version never call the webhook" "3 $n" \
    sh -c "$K get widgets.v1.conv.kubicle.test w1 -n conv -o 'jsonpath={.spec.size}'; echo ' '\$(wc -l <$E2E_TMP/crdconv/reviews.log)"
  expect_eq "get through v2: the webhook's conversion" "conv.kubicle.test/v2 3 x v2" \
    $K get widgets.v2.conv.kubicle.test w1 -n conv -o 'jsonpath={.apiVersion} {.spec.capacity} {.metadata.labels.app} {.metadata.labels.converted-to}'
  expect_eq "... v2's schema defaults apply to the converted object, fields of no schema are pruned" "blue|" \
    $K get widgets.v2.conv.kubicle.test w1 -n conv -o 'jsonpath={.spec.color}|{.spec.junk}'
  expect_eq "... the ConversionReview as kube sends it" \
    "apiextensions.k8s.io/v1 ConversionReview conv.kubicle.test/v2 True ['conv.kubicle.test/v1'] ['w1']" \
    cv_review 1 "r['apiVersion'] + ' ' + r['kind'] + ' ' + r['request']['desiredAPIVersion'] + ' ' + str(len(r['request']['uid']) == 36) + ' ' + str([o['apiVersion'] for o in r['request']['objects']]) + ' ' + str([o['metadata']['name'] for o in r['request']['objects']])"
  expect_eq "list through v2: every item converted" "3 5" \
    $K get widgets.v2.conv.kubicle.test -n conv -o 'jsonpath={.items[*].spec.capacity}'
  expect_eq "... in one review" "['w1', 'w2']" \
    cv_review 1 "[o['metadata']['name'] for o in r['request']['objects']]"
  expect "a Table through v2" "w1 .*" $K get widgets.v2.conv.kubicle.test -n conv
  expect "a label selector through v2" "^w1$" \
    $K get widgets.v2.conv.kubicle.test -n conv -l app=x -o name --no-headers -o 'custom-columns=N:.metadata.name'
  printf 'apiVersion: conv.kubicle.test/v2\nkind: Widget\nmetadata: {name: w3, namespace: conv}\nspec: {capacity: 7}\n' >"$d/w3.yaml"
  expect "kubectl apply through v2: the object goes to the webhook on its way to storage" "widget.conv.kubicle.test/w3 created" \
    $K apply -f "$d/w3.yaml"
  expect_eq "... the review asks for the storage version, with the v2 object (the next one converts the answer back)" "conv.kubicle.test/v1 ['conv.kubicle.test/v2'] [{'capacity': 7, 'color': 'blue'}]" \
    cv_review 2 "r['request']['desiredAPIVersion'] + ' ' + str([o['apiVersion'] for o in r['request']['objects']]) + ' ' + str([o['spec'] for o in r['request']['objects']])"
  expect_eq "... stored converted (read through v1), fields of no schema pruned" "7 v1 " \
    $K get widgets.v1.conv.kubicle.test w3 -n conv -o 'jsonpath={.spec.size} {.metadata.labels.converted-to} {.spec.junk}'
  expect_eq "a create through v2 answers the stored object converted back by a second call (kube's decode)" \
    "conv.kubicle.test/v2 8 v2 blue|" \
    $K create -o 'jsonpath={.apiVersion} {.spec.capacity} {.metadata.labels.converted-to} {.spec.color}|{.spec.junk}' -f - \
    <<<'{"apiVersion":"conv.kubicle.test/v2","kind":"Widget","metadata":{"name":"w8","namespace":"conv"},"spec":{"capacity":8}}'
  expect_eq "... that review: the stored v1 object to v2" "conv.kubicle.test/v2 ['conv.kubicle.test/v1'] [8]" \
    cv_review 1 "r['request']['desiredAPIVersion'] + ' ' + str([o['apiVersion'] for o in r['request']['objects']]) + ' ' + str([o['spec']['size'] for o in r['request']['objects']])"
  expect_eq "... the one before: the written v2 object to v1 (storage)" "conv.kubicle.test/v1" \
    cv_review 2 "r['request']['desiredAPIVersion']"
  expect_eq "... stored as the first call made it" "8 v1" \
    $K get widgets.v1.conv.kubicle.test w8 -n conv -o 'jsonpath={.spec.size} {.metadata.labels.converted-to}'
  expect_eq "a merge patch through v2 answers the stored object converted back too" "9 v2 <nil>" \
    sh -c "$K patch widgets.v2.conv.kubicle.test w8 -n conv --type=merge -p '{\"spec\":{\"capacity\":9}}' -o json | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o[\"spec\"][\"capacity\"], o[\"metadata\"][\"labels\"][\"converted-to\"], o[\"spec\"].get(\"size\", \"<nil>\"))'"
  $K delete widgets.v1.conv.kubicle.test w8 -n conv >/dev/null
  expect "a merge patch through v2 (kubectl label)" "labeled" \
    $K label widgets.v2.conv.kubicle.test w1 -n conv more=1
  expect_eq "... stored, read through v1" "1 3" \
    $K get widgets.v1.conv.kubicle.test w1 -n conv -o 'jsonpath={.metadata.labels.more} {.spec.size}'
  expect "server-side apply through v2" "serverside-applied" \
    $K apply --server-side --force-conflicts -f - <<<'{"apiVersion":"conv.kubicle.test/v2","kind":"Widget","metadata":{"name":"w3","namespace":"conv"},"spec":{"capacity":9}}'
  expect_eq "... stored, read through v1" "9" \
    $K get widgets.v1.conv.kubicle.test w3 -n conv -o 'jsonpath={.spec.size}'
  $K patch widgets.v1.conv.kubicle.test w3 -n conv --type=merge -p '{"metadata":{"finalizers":["conv.kubicle.test/hold"]}}' >/dev/null
  expect "a delete through v2 of an object with a finalizer" 'widget.conv.kubicle.test "w3" deleted' \
    $K delete widgets.v2.conv.kubicle.test w3 -n conv --wait=false
  expect_eq "... marked for deletion, its stored content unchanged (read through v1)" "true 9 " \
    sh -c "$K get widgets.v1.conv.kubicle.test w3 -n conv -o 'jsonpath={.metadata.deletionTimestamp}' | grep -q . && echo -n 'true '; $K get widgets.v1.conv.kubicle.test w3 -n conv -o 'jsonpath={.spec.size} {.spec.capacity}'"
  $K patch widgets.v1.conv.kubicle.test w3 -n conv --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  expect_fail "... gone once its finalizer is" "NotFound" $K get widgets.v1.conv.kubicle.test w3 -n conv
  printf 'apiVersion: conv.kubicle.test/v1\nkind: Widget\nmetadata: {name: w4, namespace: conv}\nspec: {size: 4}\n' | $K apply -f - >/dev/null
  kcurl -X DELETE "$SERVER_URL/apis/conv.kubicle.test/v2/namespaces/conv/widgets/w4" >"$d/del.json"
  expect_eq "a delete through v2 answers the object converted" "conv.kubicle.test/v2 4" \
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["apiVersion"], o["spec"]["capacity"])' "$d/del.json"
  printf 'apiVersion: conv.kubicle.test/v1\nkind: Widget\nmetadata: {name: w5, namespace: conv, labels: {batch: b}}\nspec: {size: 5}\n---\napiVersion: conv.kubicle.test/v1\nkind: Widget\nmetadata: {name: w6, namespace: conv, labels: {batch: b}}\nspec: {size: 6}\n' | $K apply -f - >/dev/null
  kcurl -X DELETE "$SERVER_URL/apis/conv.kubicle.test/v2/namespaces/conv/widgets?labelSelector=batch%3Db" >"$d/delc.json"
  expect_eq "a deletecollection through v2 answers the objects converted" "conv.kubicle.test/v2 [5, 6]" \
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["items"][0]["apiVersion"], [i["spec"]["capacity"] for i in o["items"]])' "$d/delc.json"
  expect_eq "... and they are gone, the others kept" "w1 w2" \
    $K get widgets.v1.conv.kubicle.test -n conv -o 'jsonpath={.items[*].metadata.name}'
  $K get widgets.v2.conv.kubicle.test -n conv -w -o 'jsonpath={.metadata.name}={.spec.capacity}{"\n"}' >"$d/watch.out" 2>&1 &
  local wpid=$!
  sleep 1
  printf 'apiVersion: conv.kubicle.test/v1\nkind: Widget\nmetadata: {name: w7, namespace: conv}\nspec: {size: 70}\n' | $K apply -f - >/dev/null
  $K patch widgets.v1.conv.kubicle.test w7 -n conv --type=merge -p '{"spec":{"size":71}}' >/dev/null
  $K delete widgets.v1.conv.kubicle.test w7 -n conv >/dev/null
  E2E_UNTIL=10 expect_until "a watch through v2: the current objects, then each event converted, in order" \
    "w1=3 w2=5 w7=70 w7=71 w7=71" sh -c "tr '\n' ' ' <'$d/watch.out' | sed 's/ \$//'"
  kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
  # failures: kube's words, 500
  cv_crd /fail | $K apply -f - >/dev/null
  expect_fail "a webhook that refuses: kube's error" \
    'conversion webhook for conv.kubicle.test/v1, Kind=Widget failed: no conversion today' \
    $K get widgets.v2.conv.kubicle.test w1 -n conv
  expect_eq "... 500, no reason" "500 None" \
    sh -c "kcurl() { curl -sS --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key \"\$@\"; }; kcurl '$SERVER_URL/apis/conv.kubicle.test/v2/namespaces/conv/widgets/w1' | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s[\"code\"], s.get(\"reason\"))'"
  cv_crd /bad-uid | $K apply -f - >/dev/null
  expect_fail "another uid: kube's error" \
    'conversion webhook for conv.kubicle.test/v1, Kind=Widget failed: expected response.uid="[0-9a-f-]{36}", got "not-the-one"' \
    $K get widgets.v2.conv.kubicle.test w1 -n conv
  cv_crd /short | $K apply -f - >/dev/null
  expect_fail "one object fewer: kube's error" \
    'conversion webhook for conv.kubicle.test/v1, Kind=Widget returned 1 objects, expected 2' \
    $K get widgets.v2.conv.kubicle.test -n conv
  cv_crd /rename | $K apply -f - >/dev/null
  expect_fail "a renamed object: kube's error" \
    'conversion webhook for conv.kubicle.test/v1, Kind=Widget returned invalid object: must have the same name: w1 != someone-else' \
    $K get widgets.v2.conv.kubicle.test w1 -n conv
  CV_URL=https://127.0.0.1:1 cv_crd /convert | $K apply -f - >/dev/null
  expect_fail "a write through v2 when the webhook fails: kube's error, nothing stored" \
    'conversion webhook for conv.kubicle.test/v2, Kind=Widget failed: Post "https://127.0.0.1:1/convert\?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused$' \
    $K create -f - <<<'{"apiVersion":"conv.kubicle.test/v2","kind":"Widget","metadata":{"name":"w9","namespace":"conv"},"spec":{"capacity":1}}'
  expect_fail "... nothing stored" "NotFound" $K get widgets.v1.conv.kubicle.test w9 -n conv
  expect_fail "an unreachable webhook: kube's error" \
    'conversion webhook for conv.kubicle.test/v1, Kind=Widget failed: Post "https://127.0.0.1:1/convert\?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused$' \
    $K get widgets.v2.conv.kubicle.test w1 -n conv
  expect_eq "... reads through v1 still work" "3" \
    $K get widgets.v1.conv.kubicle.test w1 -n conv -o 'jsonpath={.spec.size}'
  $K delete ns conv --wait=false >/dev/null
}

crdconv_suite() {
  local KCFG=$E2E_TMP/main/kubeconfig DATA_DIR=$E2E_TMP/main SERVER_URL
  SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG")
  local d=$E2E_TMP/crdconv i
  local K="kubectl --kubeconfig $KCFG --cache-dir $d/cache"
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=conversion" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
  python3 "$E2E_LIB_DIR/conversion_server.py" "$d/cert.pem" "$d/key.pem" "$d/port" "$d/reviews.log" \
    >>"$d/server.log" 2>&1 &
  E2E_PIDS+=("$!")
  for i in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.05; done
  local CV_URL="https://127.0.0.1:$(cat "$d/port")" CV_CA
  CV_CA=$(base64 -w0 "$d/cert.pem")
  : >"$d/reviews.log"
  crdconv_install "$K" "$d"
  crdconv_validation "$K" "$d"
  crdconv_convert "$K" "$d"
}
