# SPDX-License-Identifier: Apache-2.0
# A hostile tenant names host objects through its pods (issue 21, items 2
# and 4): host service-account tokens, host volumes, Secrets, claims,
# trust bundles, DRA claims, cloud disks. For each reference kind: the
# tenant's answer, and what the host pod and the host objects look like
# (no host token, no host object the tenant named reached). A tenant made
# by `kubicle create` on the host stand-in, without a policy: the floor
# every tenant gets.

hr_k() { kubectl --kubeconfig "$KUBICLE_HOME/tenants/hr/kubeconfig" "$@"; }
hr_h() { kubectl --kubeconfig "$HR_HOST_KCFG" -n kubicle-hr "$@"; }
hr_until() { # SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  local t0=$SECONDS
  while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; e2e_nap $t0; done
  "$@" >/dev/null 2>&1
}

# hr_pod NAME VOLUMES [SPEC-EXTRA]: a pod mounting nothing, with these
# volumes (a YAML flow list) and more spec lines.
hr_pod() {
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  volumes: $2
  containers:
  - {name: c, image: busybox, command: [sleep, "3600"]}
${3:-}
YAML
}

# The payload of a JWT (base64url, unpadded), as JSON.
hr_jwt() {
  python3 -c 'import sys,json,base64
p=sys.argv[1].split(".")[1]; p+="="*(-len(p)%4)
print(json.dumps(json.loads(base64.urlsafe_b64decode(p)), sort_keys=True))' "$1"
}

# hr_api TOKEN PATH: the tenant API's HTTP status for a GET with this bearer
# token (no client certificate).
hr_api() {
  local kc=$KUBICLE_HOME/tenants/hr/kubeconfig url
  url=$(kubectl --kubeconfig "$kc" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  kubectl --kubeconfig "$kc" config view --raw \
    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$E2E_TMP/hr-ca.crt"
  curl -s -o /dev/null -w '%{http_code}' --cacert "$E2E_TMP/hr-ca.crt" \
    -H "Authorization: Bearer $1" "$url$2"
}

# The decoded token under key KEY of host Secret NAME.
hr_secret_key() { hr_h get secret "$1" -o "go-template={{index .data \"$2\" | base64decode}}"; }

hostrefs_account() {
  echo "== hostrefs: host pods run under a host account of no rights"
  expect_eq "host: kubicle create made kubicle.pods, no token automounted" \
    "kubicle.pods false hr" \
    hr_h get serviceaccount kubicle.pods -o \
    'jsonpath={.metadata.name} {.automountServiceAccountToken} {.metadata.labels.kubicle\.dev/tenant}'
  expect_eq "host: no RoleBinding or ClusterRoleBinding names it" "0" \
    sh -c "kubectl --kubeconfig $HR_HOST_KCFG get rolebindings,clusterrolebindings -A -o json |
      jq '[.items[].subjects[]? | select(.name == \"kubicle.pods\")] | length'"
  expect_eq "host: it may read no Secret and make no pod (the syncer's account may)" "no no yes" \
    sh -c "echo \$(kubectl --kubeconfig $HR_HOST_KCFG auth can-i get secrets -n kubicle-hr --as system:serviceaccount:kubicle-hr:kubicle.pods) \$(kubectl --kubeconfig $HR_HOST_KCFG auth can-i create pods -n kubicle-hr --as system:serviceaccount:kubicle-hr:kubicle.pods) \$(kubectl --kubeconfig $HR_HOST_KCFG auth can-i create pods -n kubicle-hr --as system:serviceaccount:kubicle-hr:kubicle-hr)"
  expect "tenant: a pod naming a service account is admitted" 'pod/plain created' \
    hr_k apply -f <(hr_pod plain '[]' '  serviceAccountName: default')
  hr_until 30 hr_h get pod plain-x-default-x-hr
  expect_eq "host: the pod runs as kubicle.pods, without a host token" "kubicle.pods false" \
    hr_h get pod plain-x-default-x-hr -o \
    'jsonpath={.spec.serviceAccountName} {.spec.automountServiceAccountToken}'
}

hostrefs_tokens() {
  echo "== hostrefs: projected service-account tokens are the tenant's"
  expect "tenant: a pod with a Vault-audience token and an API token is admitted" 'pod/tok created' \
    hr_k apply -f <(hr_pod tok '[{name: ids, projected: {sources: [
      {serviceAccountToken: {audience: vault, expirationSeconds: 7200, path: vault}},
      {serviceAccountToken: {path: api}}]}}]')
  hr_until 30 hr_h get pod tok-x-default-x-hr
  local hp
  hp=$(hr_h get pod tok-x-default-x-hr -o json)
  if grep -q serviceAccountToken <<<"$hp"; then
    fail "host: the host pod still has a serviceAccountToken source (a host token)"
  else pass "host: no serviceAccountToken source reaches the host"; fi
  local sec
  sec=$(hr_h get pod tok-x-default-x-hr -o \
    'jsonpath={.spec.volumes[?(@.name=="ids")].projected.sources[0].secret.name}')
  expect_eq "host: the tokens are items of the pod's token Secret, at the same paths" \
    "ids-0:vault ids-1:api " \
    hr_h get pod tok-x-default-x-hr -o \
    'jsonpath={range .spec.volumes[?(@.name=="ids")].projected.sources[*].secret.items[*]}{.key}:{.path} {end}'
  expect_until "host: the token Secret is there, labelled and annotated for the pod" \
    "hr tok TokenRequest" \
    hr_h get secret "$sec" -o \
    'jsonpath={.metadata.labels.kubicle\.dev/tenant} {.metadata.annotations.kubicle\.dev/name} {.metadata.annotations.kubicle\.dev/kind}'
  local vault api
  vault=$(hr_secret_key "$sec" ids-0) api=$(hr_secret_key "$sec" ids-1)
  expect "the Vault token: the tenant's account, its audience, bound to the pod" \
    '"aud": \["vault"\].*"pod": \{"name": "tok", "uid": "[0-9a-f-]{36}"\}.*"sub": "system:serviceaccount:default:default"' \
    hr_jwt "$vault"
  expect_eq "the Vault token lives the 7200 s asked" "7200" \
    python3 -c 'import sys,json; c=json.loads(sys.argv[1]); print(c["exp"]-c["iat"])' "$(hr_jwt "$vault")"
  expect "the API token: the tenant API's audience, an hour" \
    '"aud": \["https://kubernetes.default.svc.cluster.local"\]' hr_jwt "$api"
  expect_eq "the tenant API takes the API token" "200" hr_api "$api" /api
  expect_eq "... not the Vault one (another audience)" "401" hr_api "$vault" /api
  expect "tenant: deleting the pod" 'pod "tok" deleted' hr_k delete pod tok --wait=false
  expect_until "the API token of a deleted pod is refused (bound to it)" "401" \
    hr_api "$api" /api
  expect_until "host: the token Secret goes with its pod" "" \
    sh -c "kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get secret $sec -o name 2>/dev/null"
  expect_fail "tenant: a token of 60 s is refused, as kube refuses it" \
    'spec.volumes\[0\].projected.sources\[0\].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes' \
    hr_k apply -f <(hr_pod short '[{name: t, projected: {sources: [{serviceAccountToken: {expirationSeconds: 60, path: t}}]}}]')
}

# A projected token is refreshed on the host when it is due (80 % of its
# lifetime: 480 s of a 600 s token), proven without waiting: tenant hrc runs
# with a wall clock the test moves ahead (tests/e2e/clockshift.c, an
# LD_PRELOAD library of the tests only; monotonic time, and so the
# syncer's 30 s resync, keeps its pace). Nothing in the product knows.
hostrefs_token_refresh() {
  echo "== hostrefs: a projected token is refreshed when due (the tenant's clock moved ahead)"
  local shim=${KUBICLE_CLOCKSHIFT:-$(dirname "$KUBICLE_STANDIN")/../libclockshift.so}
  [ -f "$shim" ] || { fail "hostrefs: no clock-shift library ($shim; ninja builds it)"; return; }
  local clk=$E2E_TMP/hrc-clock
  echo 0 >"$clk"
  LD_PRELOAD=$shim KUBICLE_TEST_CLOCK_FILE=$clk \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    "$KUBICLE" create hrc --host-kubeconfig "$HR_HOST_KCFG" --queue qhrc --wait \
    >"$E2E_TMP/hrc-create.log" 2>&1 || { fail "hostrefs: tenant hrc: $(tail -3 "$E2E_TMP/hrc-create.log")"; return; }
  [ -f "$KUBICLE_HOME/tenants/hrc/supervisor.pid" ] &&
    E2E_PIDS+=("$(cat "$KUBICLE_HOME/tenants/hrc/supervisor.pid")")
  local kc=$KUBICLE_HOME/tenants/hrc/kubeconfig
  expect "hrc: a pod with a 600 s projected token is admitted" 'pod/tok created' \
    kubectl --kubeconfig "$kc" apply -f <(hr_pod tok '[{name: ids, projected: {sources: [
      {serviceAccountToken: {expirationSeconds: 600, path: api}}]}}]')
  local H="kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hrc" sec old new
  hr_until 30 $H get pod tok-x-default-x-hrc
  sec=$($H get pod tok-x-default-x-hrc -o \
    'jsonpath={.spec.volumes[?(@.name=="ids")].projected.sources[0].secret.name}')
  hr_until 30 $H get secret "$sec"
  old=$($H get secret "$sec" -o 'go-template={{index .data "ids-0" | base64decode}}')
  expect "hrc: the host Secret holds the tenant's token" '"pod": \{"name": "tok"' hr_jwt "$old"
  echo 500 >"$clk" # 500 s later, for the tenant: past 80 % of 600 s
  expect_until_match "host: the syncer wrote a new token into the pod's Secret (next resync)" 120 \
    '^ok$' sh -c "t=\$($H get secret $sec -o 'go-template={{index .data \"ids-0\" | base64decode}}'); [ -n \"\$t\" ] && [ \"\$t\" != '$old' ] && echo ok"
  new=$($H get secret "$sec" -o 'go-template={{index .data "ids-0" | base64decode}}')
  expect_eq "host: the new token was issued 500 s later (the tenant's clock), and lives 600 s" \
    "true 600" python3 -c 'import sys,json
o=json.loads(sys.argv[1]); n=json.loads(sys.argv[2])
print(str(n["iat"]-o["iat"] >= 480).lower(), n["exp"]-n["iat"])' "$(hr_jwt "$old")" "$(hr_jwt "$new")"
  local url
  url=$(kubectl --kubeconfig "$kc" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  kubectl --kubeconfig "$kc" config view --raw \
    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$E2E_TMP/hrc-ca.crt"
  expect_eq "hrc: the tenant API takes the new token" "200" \
    curl -s -o /dev/null -w '%{http_code}' --cacert "$E2E_TMP/hrc-ca.crt" \
    -H "Authorization: Bearer $new" "$url/api"
  "$KUBICLE" stop hrc >/dev/null 2>&1
  cp "$KUBICLE_HOME/tenants/hrc/server.log" "$E2E_TMP/tenant-hrc.log" 2>/dev/null
  "$KUBICLE" delete hrc >/dev/null 2>&1
}

hostrefs_claims() {
  echo "== hostrefs: generic ephemeral volumes get a synced claim's translation and checks"
  hr_k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: seed}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
  expect "tenant: an ephemeral volume binding a host volume by name and cloning claims is admitted" \
    'pod/eph created' \
    hr_k apply -f <(hr_pod eph '[{name: scratch, ephemeral: {volumeClaimTemplate: {
      metadata: {labels: {app: x, kubicle.dev/tenant: victim}, annotations: {volume.kubernetes.io/selected-node: n9}},
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}},
        volumeName: pv-of-the-host,
        dataSource: {kind: PersistentVolumeClaim, name: seed},
        dataSourceRef: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: host-snap}}}}}]')
  hr_until 30 hr_h get pod eph-x-default-x-hr
  expect_eq "tenant: the ephemeral-volume controller made the claim, owned by the pod" \
    "Pod eph true 1Gi" hr_k get pvc eph-scratch -o \
    'jsonpath={.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller} {.spec.resources.requests.storage}'
  expect_eq "host: the pod mounts the synced claim; no template reaches the host" \
    "eph-scratch-x-default-x-hr " \
    hr_h get pod eph-x-default-x-hr -o \
    'jsonpath={.spec.volumes[?(@.name=="scratch")].persistentVolumeClaim.claimName} {.spec.volumes[?(@.name=="scratch")].ephemeral}'
  hr_until 30 hr_h get pvc eph-scratch-x-default-x-hr
  expect_eq "host: the claim has no volumeName, no snapshot, and clones the tenant's own claim" \
    "|seed-x-default-x-hr|" \
    sh -c "kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get pvc eph-scratch-x-default-x-hr -o json |
      jq -r '.spec | \"\(.volumeName // \"\")|\(.dataSource.name)|\(.dataSourceRef.name // \"\")\"'"
  expect_eq "host: the claim carries the tenant's label, not the one it wrote; no node steering" \
    "hr x " \
    hr_h get pvc eph-scratch-x-default-x-hr -o \
    'jsonpath={.metadata.labels.kubicle\.dev/tenant} {.metadata.labels.app} {.metadata.annotations.volume\.kubernetes\.io/selected-node}'
  echo "== hostrefs: an ephemeral volume meets the tenant's storage quota"
  hr_k create namespace q >/dev/null
  hr_k -n q create quota storage --hard=requests.storage=1Gi >/dev/null
  expect "tenant: a pod asking a 5Gi ephemeral volume is admitted (kube checks the claim)" 'pod/big created' \
    hr_k -n q apply -f <(hr_pod big '[{name: s, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}}}}]')
  hr_until 30 hr_h get pod big-x-q-x-hr
  expect_until_match "tenant: the controller's create of its claim is refused by the quota" 30 \
    'ephemeral volume claim q/big-s not created' cat "$KUBICLE_HOME/tenants/hr/server.log"
  expect_fail "... so there is no such claim" 'NotFound|not found' hr_k -n q get pvc big-s
  expect_eq "host: the pod names the tenant's claim, and the host has no such claim" \
    "big-s-x-q-x-hr|" \
    sh -c "echo \"\$(kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get pod big-x-q-x-hr -o jsonpath='{.spec.volumes[0].persistentVolumeClaim.claimName}')|\$(kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get pvc big-s-x-q-x-hr -o name 2>/dev/null)\""
  hr_k -n q delete pod big --wait=false >/dev/null
  echo "== hostrefs: an ephemeral volume's storageClassName is governed as a claim's"
  hr_k -n q create quota gold --hard=gold.storageclass.storage.k8s.io/persistentvolumeclaims=0 >/dev/null
  expect_fail "tenant: a claim of class gold is refused by the class quota (the rule for claims)" \
    'persistentvolumeclaims "direct" is forbidden: exceeded quota: gold, requested: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1' \
    hr_k -n q apply -f - <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: direct}
spec: {storageClassName: gold, accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Mi}}}
YAML
  expect "tenant: a pod with a gold ephemeral volume is admitted (kube checks the claim)" 'pod/gold created' \
    hr_k -n q apply -f <(hr_pod gold '[{name: s, ephemeral: {volumeClaimTemplate: {spec: {storageClassName: gold, accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Mi}}}}}}]')
  expect_until_match "tenant: ... but its claim meets the same class quota and is not made" 30 \
    'ephemeral volume claim q/gold-s not created' cat "$KUBICLE_HOME/tenants/hr/server.log"
  expect_fail "... so there is no such claim" 'NotFound|not found' hr_k -n q get pvc gold-s
  expect "tenant: a pod with a silver ephemeral volume is admitted" 'pod/silver created' \
    hr_k -n q apply -f <(hr_pod silver '[{name: s, ephemeral: {volumeClaimTemplate: {spec: {storageClassName: silver, accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Mi}}}}}}]')
  hr_until 30 hr_h get pvc silver-s-x-q-x-hr
  expect_eq "host: its claim keeps the class, as a synced claim does, and binds no host volume" \
    "silver|" hr_h get pvc silver-s-x-q-x-hr -o 'jsonpath={.spec.storageClassName}|{.spec.volumeName}'
  hr_k -n q delete pod gold silver --wait=false >/dev/null
  echo "== hostrefs: a claim that can only bind an existing host volume binds only this tenant's"
  expect "tenant: an ephemeral volume of no class, selecting another tenant's volumes, is admitted" \
    'pod/static created' \
    hr_k -n q apply -f <(hr_pod static '[{name: s, ephemeral: {volumeClaimTemplate: {spec: {storageClassName: "", selector: {matchLabels: {kubicle.dev/tenant: victim, disk: fast}}, accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Mi}}}}}}]')
  hr_until 30 hr_h get pvc static-s-x-q-x-hr
  expect_eq "host: its claim selects only volumes labelled for tenant hr" \
    "hr fast" hr_h get pvc static-s-x-q-x-hr -o 'jsonpath={.spec.selector.matchLabels.kubicle\.dev/tenant} {.spec.selector.matchLabels.disk}'
  hr_k -n q delete pod static --wait=false >/dev/null
}

hostrefs_secrets() {
  echo "== hostrefs: Secrets named inside volume plugins are the tenant's"
  hr_h create secret generic host-creds --from-literal=k=host-secret >/dev/null
  hr_k create secret generic host-creds --from-literal=k=tenant-secret >/dev/null
  expect "tenant: CSI and flexVolume naming a Secret the host also has are admitted" 'pod/plug created' \
    hr_k apply -f <(hr_pod plug '[{name: a, csi: {driver: secrets.example.com, nodePublishSecretRef: {name: host-creds}}},
      {name: b, flexVolume: {driver: example/flex, secretRef: {name: host-creds}}},
      {name: c, azureFile: {secretName: host-creds, shareName: s}},
      {name: d, cephfs: {monitors: [m], secretRef: {name: host-creds}}},
      {name: e, rbd: {monitors: [m], image: i, secretRef: {name: host-creds}}},
      {name: f, iscsi: {targetPortal: p, iqn: q, lun: 0, secretRef: {name: host-creds}}}]')
  hr_until 30 hr_h get pod plug-x-default-x-hr
  expect_eq "host: every plugin names the tenant's copy" \
    "host-creds-x-default-x-hr host-creds-x-default-x-hr host-creds-x-default-x-hr host-creds-x-default-x-hr host-creds-x-default-x-hr host-creds-x-default-x-hr" \
    hr_h get pod plug-x-default-x-hr -o \
    'jsonpath={.spec.volumes[0].csi.nodePublishSecretRef.name} {.spec.volumes[1].flexVolume.secretRef.name} {.spec.volumes[2].azureFile.secretName} {.spec.volumes[3].cephfs.secretRef.name} {.spec.volumes[4].rbd.secretRef.name} {.spec.volumes[5].iscsi.secretRef.name}'
  expect_until "host: the copy holds the tenant's value" "tenant-secret" \
    hr_h get secret host-creds-x-default-x-hr -o 'go-template={{.data.k | base64decode}}'
  expect_eq "host: the host's own Secret is untouched, and no pod names it" "host-secret" \
    hr_h get secret host-creds -o 'go-template={{.data.k | base64decode}}'
}

hostrefs_refused() {
  echo "== hostrefs: what names a host object no translation can give is refused"
  local v
  for v in 'awsElasticBlockStore: {volumeID: vol-0123}' 'gcePersistentDisk: {pdName: host-disk}' \
    'azureDisk: {diskName: d, diskURI: /subscriptions/x/disks/d}' 'vsphereVolume: {volumePath: "[ds] d.vmdk"}' \
    'portworxVolume: {volumeID: v}' 'photonPersistentDisk: {pdID: p}' 'fc: {wwids: [w]}' \
    'quobyte: {registry: r, volume: v}' 'glusterfs: {endpoints: host-endpoints, path: p}' \
    'gitRepo: {repository: "https://example.com/r.git"}'; do
    local src=${v%%:*}
    expect_fail "tenant: $src is refused naming the field" \
      "The Pod \"r\" is invalid: spec.volumes\\[0\\]\\.$src: Forbidden: $src volumes are not allowed" \
      hr_k apply -f <(hr_pod r "[{name: x, $v}]")
  done
  expect_fail "tenant: cinder without its own Secret is refused (the host's credentials)" \
    'spec.volumes\[0\].cinder.secretRef: Required value: a cinder volume needs a secretRef' \
    hr_k apply -f <(hr_pod r '[{name: x, cinder: {volumeID: v}}]')
  expect_fail "tenant: a clusterTrustBundle source is refused (the host's bundles)" \
    'spec.volumes\[0\].projected.sources\[0\].clusterTrustBundle: Forbidden' \
    hr_k apply -f <(hr_pod r '[{name: x, projected: {sources: [{clusterTrustBundle: {name: host-bundle, path: b}}]}}]')
  expect_fail "tenant: a DRA claim is refused in one place, the floor (the host has no copy)" \
    'pods "r" is forbidden: policy hostrefs: spec.resourceClaims\[0\]: dynamic resource allocation is not allowed: the shared host cluster has no copy' \
    hr_k apply -f <(hr_pod r '[]' '  resourceClaims: [{name: g, resourceClaimName: host-claim}]')
  expect_fail "tenant: a GMSA credential spec name is refused (a host object)" \
    'spec.securityContext.windowsOptions.gmsaCredentialSpecName: Forbidden' \
    hr_k apply -f <(hr_pod r '[]' '  securityContext: {windowsOptions: {gmsaCredentialSpecName: host-gmsa}}')
  expect_fail "tenant: a Deployment whose template names a host disk is refused by the floor, naming the field" \
    'deployments.apps "dep" is forbidden: policy hostrefs: spec.volumes\[0\].awsElasticBlockStore: no policy allows it' \
    hr_k create -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep}
spec:
  selector: {matchLabels: {app: dep}}
  template:
    metadata: {labels: {app: dep}}
    spec:
      containers: [{name: c, image: busybox}]
      volumes: [{name: d, awsElasticBlockStore: {volumeID: vol-0123}}]
YAML
  hostrefs_controllers
  expect_eq "host: none of them reached the host" "" \
    sh -c "kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get pod r-x-default-x-hr -o name 2>/dev/null"
  expect_eq "host: the tenant's pods there are exactly the admitted ones" \
    "pod/eph-x-default-x-hr pod/plain-x-default-x-hr pod/plug-x-default-x-hr" \
    sh -c "kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get pods -l kubicle.dev/tenant=hr -o name | sort | tr '\n' ' ' | sed 's/ \$//'"
}

# Controller-made pods are held to every check a tenant's own pod meets
# (proxy/api/hostpod.c hostpod_refuse on the controllers' path too): a
# template field refused only at the pod gets kube's FailedCreate event
# naming the field, and nothing reaches the host.
hostrefs_controllers() {
  echo "== hostrefs: controllers' pods meet the pod checks; FailedCreate names the field"
  hr_k create namespace ctl >/dev/null
  hr_k -n ctl apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: gm}
spec:
  selector: {matchLabels: {app: gm}}
  template:
    metadata: {labels: {app: gm}}
    spec:
      securityContext: {windowsOptions: {gmsaCredentialSpecName: host-gmsa}}
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: tb}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, volumeMounts: [{name: b, mountPath: /b}]}]
      volumes: [{name: b, projected: {sources: [{clusterTrustBundle: {name: host-bundle, path: b}}]}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ci}
spec:
  serviceName: ci
  selector: {matchLabels: {app: ci}}
  template:
    metadata: {labels: {app: ci}}
    spec:
      containers: [{name: c, image: busybox}]
      volumes: [{name: d, cinder: {volumeID: host-volume}}]
YAML
  expect_until_match "tenant: the Deployment's ReplicaSet gets FailedCreate naming the GMSA field" 60 \
    'FailedCreate.*Error creating: Pod "gm-[a-z0-9-]*" is invalid: spec.securityContext.windowsOptions.gmsaCredentialSpecName: Forbidden' \
    hr_k -n ctl get events --field-selector involvedObject.kind=ReplicaSet -o 'custom-columns=R:.reason,M:.message' --no-headers
  expect_until_match "tenant: the Job gets FailedCreate naming the clusterTrustBundle source" 60 \
    'FailedCreate.*Error creating: Pod "tb-[a-z0-9]*" is invalid: spec.volumes\[0\].projected.sources\[0\].clusterTrustBundle: Forbidden' \
    hr_k -n ctl get events --field-selector involvedObject.kind=Job -o 'custom-columns=R:.reason,M:.message' --no-headers
  expect_until_match "tenant: the StatefulSet gets FailedCreate naming cinder's missing secretRef" 60 \
    'FailedCreate.*create Pod ci-0 in StatefulSet ci failed error: Pod "ci-0" is invalid: spec.volumes\[0\].cinder.secretRef: Required value' \
    hr_k -n ctl get events --field-selector involvedObject.kind=StatefulSet -o 'custom-columns=R:.reason,M:.message' --no-headers
  expect_eq "tenant: none of them has a pod" "" hr_k -n ctl get pods -o name
  expect_eq "host: nothing of namespace ctl reached the host" "" \
    sh -c "kubectl --kubeconfig $HR_HOST_KCFG -n kubicle-hr get pods -l kubicle.dev/tenant=hr -o name | grep -- '-x-ctl-x-'"
  echo "== hostrefs: an ephemeral container meets the checks of a new pod"
  hr_k get pod plain -o json |
    jq '.spec.ephemeralContainers = [{name: "dbg", image: "busybox", securityContext: {windowsOptions: {gmsaCredentialSpecName: "host-gmsa"}}}]' \
    >"$E2E_TMP/hr-eph.json"
  expect_fail "tenant: pods/ephemeralcontainers naming a host GMSA credential spec is refused" \
    'spec.ephemeralContainers\[0\].securityContext.windowsOptions.gmsaCredentialSpecName: Forbidden' \
    hr_k replace --raw /api/v1/namespaces/default/pods/plain/ephemeralcontainers -f "$E2E_TMP/hr-eph.json"
  expect_eq "host: the host pod has no ephemeral container" "" \
    hr_h get pod plain-x-default-x-hr -o 'jsonpath={.spec.ephemeralContainers[*].name}'
  echo "== hostrefs: pods/binding is the host scheduler's"
  expect_fail "tenant: binding its pod to a node is refused" \
    'pods/binding is not allowed: the shared host cluster.s scheduler places this cluster.s pods' \
    hr_k create --raw /api/v1/namespaces/default/pods/plain/binding \
    -f <(printf '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"plain"},"target":{"kind":"Node","name":"host-node-1"}}')
}

hostrefs_suite() {
  export KUBICLE_HOME=$E2E_TMP/hr-home
  start_server hrhost --standin-exec || { fail "hostrefs: host stand-in did not start"; return; }
  HR_HOST_KCFG=$KCFG
  start_scheduler hrhost
  # the host floor refuses node-mounted volumes and inline CSI drivers unless
  # a policy lists them (t_policies_floor.sh): this tenant's policy does, so
  # that what is checked here is the translation of the Secrets they name
  cat >"$E2E_TMP/hr-policy.yaml" <<'YAML'
name: hostrefs
volumeTypes: ['*']
csiDrivers: [secrets.example.com]
YAML
  # the one volume table (policies/volumes.c): a type no policy can open
  # does not load (it used to load and do nothing)
  expect_fail "a policy listing gitRepo in volumeTypes does not load, saying why" \
    'volumeTypes: gitRepo: no policy can allow it: Kubernetes 1.33 disables it \(feature gate GitRepoVolumeDriver\)' \
    "$KUBICLE" serve --data-dir "$E2E_TMP/hr-badpol" --listen 127.0.0.1:0 \
    --policy <(printf 'volumeTypes: [nfs, gitRepo]\n')
  "$KUBICLE" create hr --host-kubeconfig "$HR_HOST_KCFG" --queue qhr --gpus 1 --wait \
    --policy "$E2E_TMP/hr-policy.yaml" \
    >"$E2E_TMP/hr-create.log" 2>&1 || { fail "hostrefs: tenant hr: $(tail -3 "$E2E_TMP/hr-create.log")"; return; }
  [ -f "$KUBICLE_HOME/tenants/hr/supervisor.pid" ] &&
    E2E_PIDS+=("$(cat "$KUBICLE_HOME/tenants/hr/supervisor.pid")")
  hostrefs_account
  hostrefs_tokens
  hostrefs_claims
  hostrefs_secrets
  hostrefs_refused
  hostrefs_token_refresh
  # stopped first: the server's log then holds what the sanitizers say at
  # its exit (the e2e summary reads it)
  "$KUBICLE" stop hr >/dev/null 2>&1
  cp "$KUBICLE_HOME/tenants/hr/server.log" "$E2E_TMP/tenant-hr.log" 2>/dev/null
  "$KUBICLE" delete hr >/dev/null 2>&1
}
