# SPDX-License-Identifier: Apache-2.0
# Admission webhooks end to end: a Python HTTPS webhook server
# (webhook_server.py) with its own CA, Mutating- and
# ValidatingWebhookConfigurations applied with kubectl, and kubectl writes
# that meet them: patches and their order, reinvocation, warnings, denials
# in kube's words, generated names, updates, deletes, dry runs, selectors,
# failure policies, timeouts, bad answers, and a client that leaves while a
# webhook thinks. Sourced by run.sh.
#
# No wait after a configuration is written: the store delivers the write's
# event to the admission configuration's watch before the write returns
# (store.c deliver_now, cfgwatch.c), and the next write reloads the set.

# wh_review N FIELD: FIELD (a python expression on `r`, the request) of the
# Nth-from-last review the webhook server received at PATH ($3, optional)
wh_review() {
  python3 - "$E2E_TMP/wh/reviews.log" "$1" "$2" "${3:-}" <<'EOF'
import json, sys
log, n, expr, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [json.loads(l) for l in open(log)]
if path:
    rows = [x for x in rows if x["path"] == path]
x = rows[-n]
r = x["review"]["request"]
print(eval(expr))
EOF
}

# wh_config KIND NAME HOOKS...: a configuration; each HOOK is
# "name|path|operations|failurePolicy|timeout|extra" (extra: YAML lines
# appended to the webhook, with \n)
wh_config() {
  local kind=$1 name=$2 h n p ops fp to extra; shift 2
  printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata: {name: %s}\nwebhooks:\n' "$kind" "$name"
  for h in "$@"; do
    IFS='|' read -r n p ops fp to extra <<<"$h"
    printf -- '- name: %s\n  admissionReviewVersions: ["v1"]\n  sideEffects: None\n' "$n"
    printf '  failurePolicy: %s\n  timeoutSeconds: %s\n' "$fp" "$to"
    printf '  clientConfig:\n    url: "%s%s"\n    caBundle: %s\n' "$WH_URL" "$p" "$WH_CA"
    printf '  rules:\n  - operations: [%s]\n    apiGroups: [""]\n    apiVersions: ["v1"]\n    resources: ["configmaps"]\n' "$ops"
    printf '  namespaceSelector: {matchLabels: {webhook-test: "true"}}\n'
    [ -n "$extra" ] && printf '%b\n' "$extra"
  done
}

webhook_suite() {
  # the "main" server, whatever suite started a server last (dynamic scope:
  # kcurl and the helpers read these too)
  local KCFG=$E2E_TMP/main/kubeconfig DATA_DIR=$E2E_TMP/main SERVER_URL
  SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG")
  local K="kubectl --kubeconfig $KCFG" d=$E2E_TMP/wh out i
  start_webhook_server "$d" DNS:whs.wh.svc
  : >"$d/reviews.log"

  $K create ns wh >/dev/null
  $K label ns wh webhook-test=true >/dev/null
  $K create ns wh-off >/dev/null

  # a CronJob's Jobs meet webhooks too: set up now, checked at the end (the
  # schedule fires within a minute)
  wh_config MutatingWebhookConfiguration jobs "jobs.kubicle.test|/label/cj|CREATE|Fail|5|" |
    sed 's#apiGroups: \[""\]#apiGroups: ["batch"]#; s#resources: \["configmaps"\]#resources: ["jobs"]#' |
    $K apply -f - >/dev/null
  $K create cronjob tick -n wh --image=registry.k8s.io/pause:3.9 --schedule='* * * * *' >/dev/null

  # two mutating configurations: "a-..." before "b-..." by name, and within
  # one the webhooks in order; b's annotator reinvoked when a later one
  # changes the object
  wh_config MutatingWebhookConfiguration b-mutate \
    "annotate.kubicle.test|/annotate|CREATE,UPDATE|Fail|5|  reinvocationPolicy: IfNeeded" \
    "label2.kubicle.test|/label/second|CREATE|Fail|5|" >"$d/m.yaml"
  { echo "---"; wh_config MutatingWebhookConfiguration a-mutate \
      "label1.kubicle.test|/label/first|CREATE|Fail|5|"; } >>"$d/m.yaml"
  expect "apply two MutatingWebhookConfigurations" "a-mutate (created|configured)" $K apply -f "$d/m.yaml"
  wh_config ValidatingWebhookConfiguration deny \
    "deny.kubicle.test|/deny|CREATE,UPDATE,DELETE|Fail|5|" >"$d/v.yaml"
  expect "apply a ValidatingWebhookConfiguration" "deny (created|configured)" $K apply -f "$d/v.yaml"

  # create: the mutating webhooks in order, then the validating one
  expect "a create meets the webhooks; their warnings reach kubectl" \
    "Warning: mutated by first" $K create cm one -n wh --from-literal=k=v
  expect_eq "... the last mutating webhook's label is stored" "second" \
    $K get cm one -n wh -o 'jsonpath={.metadata.labels.mutated-by}'
  expect_eq "... configurations by name: a's webhook ran before b's" "first" \
    wh_review 2 "r['object']['metadata']['labels']['mutated-by']" /annotate
  expect_eq "... the annotator (IfNeeded) was called again after label2 changed the object" \
    '{"mutated-by": "second"}' $K get cm one -n wh -o 'jsonpath={.metadata.annotations.seen-labels}'
  expect_eq "... twice in all" "2" grep -c '"path": "/annotate"' "$d/reviews.log"
  expect_eq "... the validating webhook saw the final object" "second" \
    wh_review 1 "r['object']['metadata']['labels']['mutated-by']" /deny
  expect_eq "... AdmissionReview v1, CREATE, the configmaps resource" \
    "admission.k8s.io/v1 CREATE configmaps v1 ConfigMap wh one" \
    wh_review 1 "' '.join([__import__('json').loads(open('$d/reviews.log').readlines()[-1])['review']['apiVersion'], r['operation'], r['resource']['resource'], r['kind']['version'], r['kind']['kind'], r['namespace'], r['name']])" /deny
  expect_eq "... the user and its groups" "kubicle-admin True" \
    wh_review 1 "r['userInfo']['username'] + ' ' + str('system:masters' in r['userInfo']['groups'])" /deny
  expect_eq "... the stored uid is the one the validating webhook saw" \
    "$(wh_review 1 "r['object']['metadata']['uid']" /deny)" \
    $K get cm one -n wh -o 'jsonpath={.metadata.uid}'
  expect_eq "... mutating webhooks of a create see no uid nor creationTimestamp" "None None" \
    wh_review 1 "str(r['object']['metadata'].get('uid')) + ' ' + str(r['object']['metadata'].get('creationTimestamp'))" /label
  expect_eq "... the timeout is in the query; kube's user agent" "timeout=5s kube-apiserver-admission" \
    python3 -c "import json; x = [json.loads(l) for l in open('$d/reviews.log')][-1]; print(x['query'], x['ua'])"

  # denial in kube's words, with the webhook's code and reason
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: wh, labels: {deny: "true"}}\n' >"$d/bad1.yaml"
  expect_fail "a denial reads as kube's" \
    'admission webhook "deny.kubicle.test" denied the request: no thanks' $K apply -f "$d/bad1.yaml"
  expect_fail "... with the webhook's warning" 'Warning: denied by the test webhook' \
    $K apply -f "$d/bad1.yaml"
  printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad2","namespace":"wh","labels":{"deny":"true"}}}' >"$d/bad.json"
  kcurl -H 'Content-Type: application/json' --data-binary @"$d/bad.json" \
    "$SERVER_URL/api/v1/namespaces/wh/configmaps" >"$d/bad.out" 2>&1
  expect_eq "... 403 Forbidden, as the webhook's status said" "403 Forbidden" \
    python3 -c "import json; s = json.load(open('$d/bad.out')); print(s['code'], s['reason'])"
  expect_fail "... and nothing is stored" "NotFound" $K get cm bad2 -n wh

  # generateName: mutating webhooks see no name, validating ones the generated one
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-, namespace: wh}\n' >"$d/gen.yaml"
  out=$($K create -f "$d/gen.yaml" -o name 2>/dev/null)
  expect_eq "generateName: the mutating webhook saw no name" "None" \
    wh_review 1 "r['object']['metadata'].get('name')" /label
  expect_eq "... the validating one saw the name that is stored" "configmap/$(wh_review 1 "r['name']" /deny)" echo "$out"

  # update: oldObject, UPDATE, and the annotator's patch on the new object
  expect "an update (label) meets the webhooks" "configmap/one labeled" $K label cm one -n wh extra=yes
  expect_eq "... UPDATE with the old object" "UPDATE None yes" \
    wh_review 1 "r['operation'] + ' ' + str(r['oldObject']['metadata']['labels'].get('extra')) + ' ' + r['object']['metadata']['labels']['extra']" /deny
  expect_eq "... the annotator saw the new labels" '{"extra": "yes", "mutated-by": "second"}' \
    $K get cm one -n wh -o 'jsonpath={.metadata.annotations.seen-labels}'
  expect_fail "an update a validating webhook denies" "denied the request: no thanks" \
    $K label cm one -n wh deny=true
  expect_eq "... leaves the object as it was" "" $K get cm one -n wh -o 'jsonpath={.metadata.labels.deny}'
  expect "a merge patch meets them too" "patched" $K patch cm one -n wh --type=merge -p '{"data":{"k":"w"}}'
  expect_eq "... UPDATE" "UPDATE w" wh_review 1 "r['operation'] + ' ' + r['object']['data']['k']" /deny

  # server-side apply: a create, then an update, both through the webhooks
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: wh}\ndata: {a: "1"}\n' >"$d/ssa.yaml"
  expect "server-side apply creates through the webhooks" "serverside-applied" \
    $K apply --server-side -f "$d/ssa.yaml"
  expect_eq "... CREATE, mutated" "CREATE second" \
    wh_review 1 "r['operation'] + ' ' + r['object']['metadata']['labels']['mutated-by']" /deny
  sed -i 's/"1"/"2"/' "$d/ssa.yaml"
  expect "... and updates through them" "serverside-applied" $K apply --server-side -f "$d/ssa.yaml"
  expect_eq "... UPDATE, the new data, the webhook's label kept" "UPDATE 2 second" \
    wh_review 1 "r['operation'] + ' ' + r['object']['data']['a'] + ' ' + r['object']['metadata']['labels']['mutated-by']" /deny

  # dry run: the webhooks are told, nothing is stored
  expect "a server dry run" "created \(server dry run\)" $K create cm dry -n wh --dry-run=server
  expect_eq "... the review says dryRun" "True" wh_review 1 "r['dryRun']" /deny
  expect_fail "... nothing stored" "NotFound" $K get cm dry -n wh

  # delete: validating webhooks see the old object; a denial keeps it
  $K create cm keep -n wh >/dev/null
  $K label cm keep -n wh deny=true >/dev/null 2>&1 # denied: still not labelled
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, namespace: wh}\ndata: {a: b}\n' | $K apply -f - >/dev/null
  expect "delete meets the validating webhook" 'configmap "one" deleted' $K delete cm one -n wh
  expect_eq "... DELETE, no object, the old one" "DELETE None one" \
    wh_review 1 "r['operation'] + ' ' + str(r['object']) + ' ' + r['oldObject']['metadata']['name']" /deny
  expect_eq "... DeleteOptions" "DeleteOptions" wh_review 1 "r['options']['kind']" /deny

  # the pods a controller creates meet the webhooks too, as the controller's
  # service account; a refused pod is the owner's FailedCreate event
  { wh_config MutatingWebhookConfiguration pods \
      "pods.kubicle.test|/label/ctrl|CREATE|Fail|5|" ; } | sed 's/resources: \["configmaps"\]/resources: ["pods"]/' >"$d/pods.yaml"
  { echo "---"; wh_config ValidatingWebhookConfiguration pods-deny \
      "pods-deny.kubicle.test|/deny|CREATE|Fail|5|" | sed 's/resources: \["configmaps"\]/resources: ["pods"]/'; } >>"$d/pods.yaml"
  expect "webhooks on pods" "pods-deny (created|configured)" $K apply -f "$d/pods.yaml"
  $K create deployment web -n wh --image=registry.k8s.io/pause:3.9 --replicas=3 >/dev/null
  expect_until "a Deployment's pods are created through the webhooks" "3" \
    sh -c "$K get pods -n wh -l app=web,mutated-by=ctrl -o name | wc -l"
  expect_eq "... each with its uid and creation time, as the server set them" "3" \
    sh -c "$K get pods -n wh -l app=web -o jsonpath='{range .items[*]}{.metadata.uid}/{.metadata.creationTimestamp}{\"\\n\"}{end}' | grep -Ec '^[0-9a-f-]{36}/20'"
  expect_eq "... the mutating webhook saw the ReplicaSet controller's service account" \
    "system:serviceaccount:kube-system:replicaset-controller CREATE pods" \
    wh_review 1 "r['userInfo']['username'] + ' ' + r['operation'] + ' ' + r['resource']['resource']" /label
  # (the ReplicaSet's own: the CronJob below may have made a Job and its pod by now)
  expect_until "... the ReplicaSet says so in its events" "3" \
    sh -c "$K get events -n wh --field-selector reason=SuccessfulCreate -o jsonpath='{range .items[*]}{.involvedObject.kind}{\"\\n\"}{end}' | grep -c '^ReplicaSet\$'"
  $K scale deployment web -n wh --replicas=5 >/dev/null
  expect_until "... scaling up creates exactly the missing ones" "5" \
    sh -c "$K get pods -n wh -l app=web -o name | wc -l"
  sleep 0.5
  expect_eq "... and no more" "5" sh -c "$K get pods -n wh -l app=web -o name | wc -l"
  # the scale subresource: Scale objects, and a patch of its replicas
  { wh_config MutatingWebhookConfiguration scale "scale.kubicle.test|/replicas/2|UPDATE|Fail|5|"; } |
    sed 's#apiGroups: \[""\]#apiGroups: ["apps"]#; s#resources: \["configmaps"\]#resources: ["deployments/scale"]#' |
    $K apply -f - >/dev/null
  expect "kubectl scale meets webhooks on deployments/scale" "deployment.apps/web scaled" \
    $K scale deployment web -n wh --replicas=4
  expect_eq "... the review: autoscaling/v1 Scale, subresource scale, 4 over 5" "autoscaling/v1 Scale scale 4 5" \
    wh_review 1 "r['kind']['group'] + '/' + r['kind']['version'] + ' ' + r['kind']['kind'] + ' ' + r['subResource'] + ' ' + str(r['object']['spec']['replicas']) + ' ' + str(r['oldObject']['spec']['replicas'])" /replicas/2
  expect_eq "... the webhook's replicas are stored" "2" \
    $K get deployment web -n wh -o 'jsonpath={.spec.replicas}'
  $K delete mutatingwebhookconfiguration scale >/dev/null
  # a custom resource's /scale, whose replicas live at its own path
  printf 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gizmos.wh.kubicle.test}\nspec:\n  group: wh.kubicle.test\n  scope: Namespaced\n  names: {plural: gizmos, singular: gizmo, kind: Gizmo}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources:\n      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, properties: {size: {type: integer, maximum: 10}}}\n          status: {type: object, properties: {size: {type: integer}}}\n' |
    $K apply -f - >/dev/null
  expect_until "a CRD with a scale subresource is served" "gizmos" \
    sh -c "$K api-resources --api-group=wh.kubicle.test -o name | cut -d. -f1"
  printf 'apiVersion: wh.kubicle.test/v1\nkind: Gizmo\nmetadata: {name: g, namespace: wh}\nspec: {size: 1}\n' | $K apply -f - >/dev/null
  { wh_config MutatingWebhookConfiguration gscale "gscale.kubicle.test|/replicas/2|UPDATE|Fail|5|"; } |
    sed 's#apiGroups: \[""\]#apiGroups: ["wh.kubicle.test"]#; s#resources: \["configmaps"\]#resources: ["gizmos/scale"]#' |
    $K apply -f - >/dev/null
  expect "kubectl scale of a custom resource meets webhooks on its /scale" "gizmo.wh.kubicle.test/g scaled" \
    $K scale gizmo g -n wh --replicas=4
  expect_eq "... the review: a Scale from the CRD's paths, 4 over 1" "autoscaling/v1 Scale scale 4 1" \
    wh_review 1 "r['kind']['group'] + '/' + r['kind']['version'] + ' ' + r['kind']['kind'] + ' ' + r['subResource'] + ' ' + str(r['object']['spec']['replicas']) + ' ' + str(r['oldObject']['spec']['replicas'])" /replicas/2
  expect_eq "... the webhook's replicas are stored at specReplicasPath, with a new generation" "2 2" \
    $K get gizmo g -n wh -o 'jsonpath={.spec.size} {.metadata.generation}'
  # kube validates the custom resource after the mutating webhooks: with
  # gscale's 2 a scale to 11 passes; without it the schema refuses 11
  expect "... the schema holds the webhook's result: 11 made 2 passes" patched \
    $K patch gizmo g -n wh --subresource=scale --type=merge -p '{"spec":{"replicas":11}}'
  $K delete mutatingwebhookconfiguration gscale >/dev/null
  expect_fail "... the CRD's schema still applies through /scale" 'spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10' \
    $K patch gizmo g -n wh --subresource=scale --type=merge -p '{"spec":{"replicas":11}}'
  $K delete crd gizmos.wh.kubicle.test >/dev/null
  printf 'apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: refused, namespace: wh}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: refused}}\n  template:\n    metadata: {labels: {app: refused, deny: "true"}}\n    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}\n' | $K apply -f - >/dev/null
  expect_until "a ReplicaSet whose pods a webhook refuses: its FailedCreate event in kube's words" \
    "Error creating: admission webhook \"pods-deny.kubicle.test\" denied the request: no thanks" \
    sh -c "$K get events -n wh --field-selector involvedObject.name=refused,reason=FailedCreate -o jsonpath='{.items[0].message}'"
  expect_eq "... no pod of it exists" "0" sh -c "$K get pods -n wh -l app=refused -o name | wc -l"
  # a Deployment's ReplicaSets meet them too
  { wh_config MutatingWebhookConfiguration rs "rs.kubicle.test|/label/rs|CREATE|Fail|5|"
    echo "---"
    wh_config ValidatingWebhookConfiguration rs-deny "rs-deny.kubicle.test|/deny|CREATE|Fail|5|"; } |
    sed 's#apiGroups: \[""\]#apiGroups: ["apps"]#; s#resources: \["configmaps"\]#resources: ["replicasets"]#' |
    $K apply -f - >/dev/null
  $K create deployment web2 -n wh --image=registry.k8s.io/pause:3.9 >/dev/null
  expect_until "a Deployment's ReplicaSet is created through the webhooks" "rs" \
    sh -c "$K get rs -n wh -l app=web2 -o jsonpath='{.items[0].metadata.labels.mutated-by}'"
  expect_eq "... as the Deployment controller" "system:serviceaccount:kube-system:deployment-controller" \
    python3 -c "import json; rs = [json.loads(l)['review']['request'] for l in open('$d/reviews.log') if '\"replicasets\"' in l]; print(rs[-1]['userInfo']['username'])"
  expect_until "... whose pods follow" "1" sh -c "$K get pods -n wh -l app=web2 -o name | wc -l"
  printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web3, namespace: wh}\nspec:\n  selector: {matchLabels: {app: web3}}\n  template:\n    metadata: {labels: {app: web3, deny: "true"}}\n    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}\n' | $K apply -f - >/dev/null
  expect_until "a ReplicaSet refused: the Deployment's FailedCreate event" "1" \
    sh -c "$K get events -n wh --field-selector involvedObject.name=web3,reason=FailedCreate -o name | wc -l"
  expect "... in kube's words" 'Failed to create new replica set "web3-[a-z0-9]+": admission webhook "rs-deny.kubicle.test" denied the request: no thanks' \
    $K get events -n wh --field-selector involvedObject.name=web3,reason=FailedCreate -o "jsonpath={.items[0].message}"
  expect_eq "... no ReplicaSet of it" "0" sh -c "$K get rs -n wh -l app=web3 -o name | wc -l"
  $K delete deployment web2 web3 -n wh >/dev/null
  $K delete mutatingwebhookconfiguration rs >/dev/null
  $K delete validatingwebhookconfiguration rs-deny >/dev/null
  $K delete rs refused -n wh >/dev/null
  $K delete deployment web -n wh >/dev/null
  $K delete mutatingwebhookconfiguration pods >/dev/null
  $K delete validatingwebhookconfiguration pods-deny >/dev/null

  # the controllers' other writes meet them too: a ReplicaSet's status
  # updates (replicasets/status) and its pod deletes when scaled down
  cat <<EOF | $K apply -f - >/dev/null
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: ctrl-writes}
webhooks:
- name: ctrl-pods-delete.kubicle.test
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig: {url: "$WH_URL/deny", caBundle: $WH_CA}
  rules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {webhook-test: "true"}}
- name: ctrl-rs-status.kubicle.test
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig: {url: "$WH_URL/allow", caBundle: $WH_CA}
  rules: [{operations: [UPDATE], apiGroups: [apps], apiVersions: [v1], resources: [replicasets/status]}]
  namespaceSelector: {matchLabels: {webhook-test: "true"}}
EOF
  printf 'apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: kept, namespace: wh}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: kept}}\n  template:\n    metadata: {labels: {app: kept, deny: "true"}}\n    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}\n' | $K apply -f - >/dev/null
  expect_until "a ReplicaSet's status update meets the webhooks (replicasets/status)" "1" \
    sh -c "$K get rs kept -n wh -o jsonpath='{.status.replicas}'"
  expect_eq "... as the ReplicaSet controller, with the old object" \
    "UPDATE replicasets status kept system:serviceaccount:kube-system:replicaset-controller True" \
    python3 -c "import json; rs = [x['review']['request'] for x in map(json.loads, open('$d/reviews.log')) if x['path'] == '/allow' and x['review']['request']['resource']['resource'] == 'replicasets']; r = rs[-1]; print(r['operation'], r['resource']['resource'], r['subResource'], r['name'], r['userInfo']['username'], 'oldObject' in r)"
  $K scale rs kept -n wh --replicas=0 >/dev/null
  expect_until "the controller's delete of its pod meets the webhook, which refuses it" yes \
    sh -c "grep -q 'DELETE of pods wh/kept-[a-z0-9]* by replicaset-controller refused: admission webhook \"ctrl-pods-delete.kubicle.test\" denied the request: no thanks' '$E2E_TMP/main.log' && echo yes"
  expect_eq "... the review: DELETE of the pod, as the controller" \
    "DELETE pods system:serviceaccount:kube-system:replicaset-controller" \
    wh_review 1 "r['operation'] + ' ' + r['resource']['resource'] + ' ' + r['userInfo']['username']" /deny
  expect_eq "... so the pod stays" "1" sh -c "$K get pods -n wh -l app=kept -o name | wc -l"
  $K label pods -n wh -l app=kept deny- >/dev/null
  expect_until "once the webhook allows it, the controller's retry deletes the pod" "0" \
    sh -c "$K get pods -n wh -l app=kept -o name | wc -l"
  $K delete validatingwebhookconfiguration ctrl-writes >/dev/null
  $K delete rs kept -n wh >/dev/null

  # CONNECT: kubectl exec meets webhooks on pods/exec with its PodExecOptions
  # (before anything else: the pod is not even on a node)
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: shell, namespace: wh}\nspec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}\n' | $K apply -f - >/dev/null
  wh_config ValidatingWebhookConfiguration connect \
    "connect-log.kubicle.test|/allow|CONNECT|Fail|5|" \
    "connect-deny.kubicle.test|/deny-bare|CONNECT|Fail|5|" |
    sed 's#resources: \["configmaps"\]#resources: ["pods/exec", "pods/portforward"]#' | $K apply -f - >/dev/null
  $K patch pod shell -n wh --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null
  expect_fail "kubectl exec refused by a CONNECT webhook, in kube's words" \
    'admission webhook "connect-deny.kubicle.test" denied the request without explanation' \
    $K exec -n wh shell -c c -- ls -l /
  expect_eq "... the review: CONNECT, PodExecOptions, the command and container" \
    "CONNECT PodExecOptions exec ['ls', '-l', '/'] c shell" \
    wh_review 1 "' '.join([r['operation'], r['kind']['kind'], r['subResource'], str(r['object']['command']), r['object']['container'], r['name']])" /allow
  expect_fail "kubectl port-forward too" 'admission webhook "connect-deny.kubicle.test" denied' \
    timeout 10 $K port-forward -n wh pod/shell 18080:80
  expect_eq "... PodPortForwardOptions (kubectl names its ports in the streams)" "PodPortForwardOptions None" \
    wh_review 1 "r['kind']['kind'] + ' ' + str(r['object'].get('ports'))" /allow
  $K delete validatingwebhookconfiguration connect >/dev/null
  $K delete pod shell -n wh --force --grace-period=0 >/dev/null 2>&1

  # a service reference: kube's resolver, the TLS name <svc>.<ns>.svc
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: whs, namespace: wh}\nspec: {type: ExternalName, externalName: localhost}\n' | $K apply -f - >/dev/null
  {
    printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n'
    printf 'metadata: {name: by-service}\nwebhooks:\n- name: svc.kubicle.test\n'
    printf '  admissionReviewVersions: ["v1"]\n  sideEffects: None\n  clientConfig:\n'
    printf '    service: {namespace: wh, name: whs, port: %s, path: /label/svc}\n' "${WH_URL##*:}"
    printf '    caBundle: %s\n' "$WH_CA"
    printf '  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]\n'
    printf '  namespaceSelector: {matchLabels: {webhook-test: "true"}}\n'
  } >"$d/svc.yaml"
  $K delete mutatingwebhookconfiguration a-mutate b-mutate >/dev/null
  $K apply -f "$d/svc.yaml" >/dev/null
  expect "a webhook named by its Service is called" "configmap/by-svc created" $K create cm by-svc -n wh
  expect_eq "... its patch applied" "svc" $K get cm by-svc -n wh -o 'jsonpath={.metadata.labels.mutated-by}'
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: whs2, namespace: wh}\nspec: {ports: [{port: 8443}]}\n' | $K apply -f - >/dev/null
  sed 's/name: whs,/name: whs2,/' "$d/svc.yaml" | $K apply -f - >/dev/null
  expect_fail "... a Service without the webhook's port fails as kube's resolver does" \
    "failed calling webhook \"svc.kubicle.test\": failed to call webhook: no service port ${WH_URL##*:} found for service \"whs2\"" \
    $K create cm by-svc2 -n wh
  $K delete mutatingwebhookconfiguration by-service >/dev/null
  $K apply -f "$d/m.yaml" >/dev/null

  # selectors: another namespace is not selected; objectSelector
  : >"$d/reviews.log"
  expect "a namespace outside namespaceSelector" "configmap/free created" $K create cm free -n wh-off
  expect_eq "... no webhook was called" "0" sh -c "wc -l <$d/reviews.log"
  expect_eq "... nothing mutated" "" $K get cm free -n wh-off -o 'jsonpath={.metadata.labels}'

  # failure policies: Ignore goes on, Fail fails in kube's words
  $K delete mutatingwebhookconfiguration a-mutate b-mutate >/dev/null
  $K delete validatingwebhookconfiguration deny >/dev/null
  # deletecollection: each object's DELETE webhooks; a refused one stays and
  # the answer is its refusal, as kube's ends with the first error (only the
  # /deny reviews are read: the CronJob's Jobs meet their webhook meanwhile)
  for i in 1 2 3; do $K create cm col-$i -n wh >/dev/null; $K label cm col-$i -n wh set=col >/dev/null; done
  $K label cm col-2 -n wh deny=true >/dev/null
  wh_config ValidatingWebhookConfiguration protect "protect.kubicle.test|/deny|DELETE|Fail|5|" |
    $K apply -f - >/dev/null
  : >"$d/reviews.log"
  kcurl -X DELETE "$SERVER_URL/api/v1/namespaces/wh/configmaps?labelSelector=set%3Dcol" >"$d/col.out" 2>&1
  expect_eq "deletecollection: a refused object is the answer, in kube's words" \
    '403 admission webhook "protect.kubicle.test" denied the request: no thanks' \
    python3 -c "import json; s = json.load(open('$d/col.out')); print(s['code'], s['message'])"
  expect_eq "... the refused one stays, the others are gone" "col-2" \
    sh -c "$K get cm -n wh -l set=col -o name | sed 's#.*/##' | tr '\n' ' ' | sed 's/ \$//'"
  expect_eq "... each object went through the webhook, as DELETE" "DELETE col-1 DELETE col-2 DELETE col-3" \
    python3 -c "import json; rs = sorted((x['review']['request'] for x in map(json.loads, open('$d/reviews.log')) if x['path'] == '/deny'), key=lambda r: r['name']); print(' '.join(r['operation'] + ' ' + r['oldObject']['metadata']['name'] for r in rs))"
  $K delete validatingwebhookconfiguration protect >/dev/null
  expect "... and without the webhook it goes" '"kind":"ConfigMapList"' \
    kcurl -X DELETE "$SERVER_URL/api/v1/namespaces/wh/configmaps?labelSelector=set%3Dcol"
  wh_config ValidatingWebhookConfiguration fail-open \
    "down.kubicle.test|/allow|CREATE|Ignore|2|" | sed "s#$WH_URL#https://127.0.0.1:1#" | $K apply -f - >/dev/null
  expect "failurePolicy Ignore: a webhook that cannot be reached is skipped" "configmap/open created" \
    $K create cm open -n wh
  $K delete validatingwebhookconfiguration fail-open >/dev/null
  wh_config ValidatingWebhookConfiguration fail-closed \
    "down.kubicle.test|/allow|CREATE|Fail|2|" | sed "s#$WH_URL#https://127.0.0.1:1#" | $K apply -f - >/dev/null
  expect_fail "failurePolicy Fail: the request fails as kube's does (Go's dial error, not errno text)" \
    'Internal error occurred: failed calling webhook "down.kubicle.test": failed to call webhook: Post "https://127.0.0.1:1/allow\?timeout=2s": dial tcp 127.0.0.1:1: connect: connection refused$' \
    $K create cm closed -n wh
  $K delete validatingwebhookconfiguration fail-closed >/dev/null
  wh_config ValidatingWebhookConfiguration odd \
    "slow.kubicle.test|/slow|CREATE|Fail|1|" >"$d/odd.yaml"
  $K apply -f "$d/odd.yaml" >/dev/null
  expect_fail "a webhook slower than timeoutSeconds fails the request" \
    'failed calling webhook "slow.kubicle.test".*context deadline exceeded' $K create cm slow -n wh
  $K delete validatingwebhookconfiguration odd >/dev/null
  for bad in "bad-uid|expected response.uid" "status500|status code 500" "deny-bare|denied the request without explanation" "huge|larger than 8 MiB"; do
    wh_config ValidatingWebhookConfiguration odd "odd.kubicle.test|/${bad%%|*}|CREATE|Fail|5|" | $K apply -f - >/dev/null
    expect_fail "an answer of /${bad%%|*} fails the request" "${bad#*|}" $K create cm odd -n wh
    $K delete validatingwebhookconfiguration odd >/dev/null
  done
  wh_config MutatingWebhookConfiguration odd "odd.kubicle.test|/bad-patch|CREATE|Fail|5|" | $K apply -f - >/dev/null
  expect_fail "a patch that does not apply fails the request" 'failed calling webhook "odd.kubicle.test"' \
    $K create cm odd -n wh
  $K delete mutatingwebhookconfiguration odd >/dev/null

  # a client that leaves while the webhook thinks: the server serves on
  wh_config ValidatingWebhookConfiguration odd "slow.kubicle.test|/slow|CREATE|Fail|5|" | $K apply -f - >/dev/null
  printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gone","namespace":"wh"}}' >"$d/gone.json"
  for i in 1 2 3; do
    kcurl -m 0.5 -H 'Content-Type: application/json' --data-binary @"$d/gone.json" \
      "$SERVER_URL/api/v1/namespaces/wh/configmaps" >/dev/null 2>&1
  done
  expect "clients gone while their webhook was called: the server serves on" "ok" kcurl "$SERVER_URL/readyz"
  sleep 3
  expect_fail "... and did not store their writes" "NotFound" $K get cm gone -n wh
  $K delete validatingwebhookconfiguration odd >/dev/null

  # matchConditions (CEL): a false one skips the webhook; an error fails
  # the call under Fail and skips the webhook under Ignore
  wh_config ValidatingWebhookConfiguration cond \
    "cond.kubicle.test|/deny-bare|CREATE|Fail|5|  matchConditions:\n  - name: only-gate\n    expression: \"object.metadata.name.startsWith('gate-')\"\n  - name: not-admins\n    expression: \"!('system:masters' in request.userInfo.groups) || object.metadata.name != 'gate-open'\"" \
    >"$d/cond.yaml"
  expect "a configuration with matchConditions is stored" "cond created" $K apply -f "$d/cond.yaml"
  expect_fail "conditions all true: the webhook is called (and denies)" \
    'admission webhook "cond.kubicle.test" denied the request' $K create cm gate-one -n wh
  expect "a false condition skips the webhook" "configmap/other created" $K create cm other -n wh
  expect "a condition on request.userInfo skips it too" "configmap/gate-open created" \
    $K create cm gate-open -n wh
  sed 's/object.metadata.name.startsWith/object.data.nope.startsWith/' "$d/cond.yaml" | $K apply -f - >/dev/null
  expect_fail "a condition that fails to evaluate fails the call under Fail" \
    "failed calling webhook \"cond.kubicle.test\": failed to evaluate match conditions: expression 'object.data.nope.startsWith\\('gate-'\\)' resulted in error: no such key: nope" \
    $K create cm gate-two -n wh --from-literal=a=b
  sed 's/object.metadata.name.startsWith/object.data.nope.startsWith/; s/failurePolicy: Fail/failurePolicy: Ignore/' \
    "$d/cond.yaml" | $K apply -f - >/dev/null
  expect "... and skips the webhook under Ignore" "configmap/gate-two created" \
    $K create cm gate-two -n wh --from-literal=a=b
  $K delete validatingwebhookconfiguration cond >/dev/null

  # webhook configurations are not sent to webhooks; other namespaces
  # are never blocked by them
  expect "a write with no configuration left" "configmap/after created" $K create cm after -n wh
  # GET /metrics: kube's admission webhook families
  $K get --raw /metrics >"$d/metrics.txt"
  expect "metrics: a denial by its webhook, with the code" \
    '^apiserver_admission_webhook_rejection_count\{name="deny.kubicle.test",type="validating",operation="CREATE",error_type="no_error",rejection_code="403"\} [1-9]' \
    cat "$d/metrics.txt"
  expect "... a webhook that could not be called, under Fail" \
    '^apiserver_admission_webhook_rejection_count\{name="down.kubicle.test",type="validating",operation="CREATE",error_type="calling_webhook_error",rejection_code="0"\} 1$' \
    cat "$d/metrics.txt"
  expect "... and under Ignore: fail open" \
    '^apiserver_admission_webhook_fail_open_count\{name="down.kubicle.test",type="validating"\} 1$' \
    cat "$d/metrics.txt"
  expect "... requests by code" \
    '^apiserver_admission_webhook_request_total\{name="label1.kubicle.test",type="admit",operation="CREATE",code="200",rejected="false"\} [1-9]' \
    cat "$d/metrics.txt"
  expect "... an HTTP 500 answer counted with its code" \
    '^apiserver_admission_webhook_request_total\{name="odd.kubicle.test",type="validating",operation="CREATE",code="500",rejected="true"\} 1$' \
    cat "$d/metrics.txt"
  expect "... the latency histogram, with kube's buckets" \
    '^apiserver_admission_webhook_admission_duration_seconds_bucket\{name="slow.kubicle.test",type="validating",operation="CREATE",rejected="true",le="25"\} [1-9]' \
    cat "$d/metrics.txt"
  expect_eq "... whose bounds are kube's" "0.005 0.025 0.1 0.5 1 2.5 10 25 +Inf" \
    sh -c "grep '^apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"deny.kubicle.test\",type=\"validating\",operation=\"DELETE\",rejected=\"false\"' $d/metrics.txt | sed 's/.*le=\"\([^\"]*\)\".*/\1/' | tr '\n' ' ' | sed 's/ \$//'"

  local fired=""
  for i in $(seq 700); do
    fired=$($K get jobs -n wh -l mutated-by=cj -o name 2>/dev/null | head -1)
    [ -n "$fired" ] && break
    sleep 0.1
  done
  if [[ "$fired" =~ ^job.batch/tick-[0-9]+$ ]]; then pass "a CronJob's Job is created through the webhooks ($fired)"
  else fail "a CronJob's Job was not created through the webhooks within 70 s"; fi
  expect_until "... and the CronJob's lastScheduleTime moves" "yes" \
    sh -c "$K get cronjob tick -n wh -o jsonpath='{.status.lastScheduleTime}' | grep -q '^20' && echo yes"
  $K delete cronjob tick -n wh >/dev/null
  $K delete mutatingwebhookconfiguration jobs >/dev/null
  $K delete ns wh wh-off --wait=false >/dev/null
}
