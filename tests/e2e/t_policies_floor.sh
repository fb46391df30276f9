# SPDX-License-Identifier: Apache-2.0
# policies_floor: the host floor (issue 21 items 3 and 5). Tenants on the
# host stand-in, without a policy and with policies, play the hostile
# tenant field by field (the host-relevant fields of the Pod spec); each
# refusal is checked in the tenant's words and on the host, where only the
# admitted pods may exist, with the fields the policy gave.

# pf_pod NAME META SPEC CONTAINER: a pod meeting "restricted" (so that only
# the field under test is refused); META, SPEC and CONTAINER are YAML lines
# (indented 2, 2 and 4), each may be empty; a pod securityContext in SPEC
# replaces the default one.
pf_pod() {
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
$2
spec:
$3
$(grep -q '^  securityContext:' <<<"$3" ||
  echo '  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}')
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
$4
YAML
}
pf_k() { local t=$1; shift; kubectl --kubeconfig "$KUBICLE_HOME/tenants/$t/kubeconfig" "$@"; }
pf_h() { kubectl --kubeconfig "$PF_HOST_KCFG" "$@"; }
pf_host_pods() { pf_h -n "kubicle-$1" get pods -l kubicle.dev/tenant="$1" -o name 2>&1 | sort | tr '\n' ' '; }
# pf_refused TENANT NAME DESC PATTERN META SPEC CONTAINER: the pod is refused
# with PATTERN (a Forbidden or Invalid Status), and nothing of it is stored.
pf_refused() {
  local t=$1 n=$2 desc=$3 pat=$4
  expect_fail "$t: $desc" "$pat" pf_k "$t" apply -f <(pf_pod "$n" "$5" "$6" "$7")
  expect_fail "$t: ... and pod $n is not stored" 'NotFound|not found' pf_k "$t" get pod "$n"
}

pf_no_policy_security() {
  echo "== floor: a tenant without a policy, Pod Security baseline"
  local F='pods "[a-z0-9]+" is forbidden: host floor: violates PodSecurity "baseline:latest"'
  pf_refused fa cap "SYS_ADMIN is refused" \
    "$F: non-default capabilities \(container \"c\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add\)" \
    '' '' '    securityContext: {allowPrivilegeEscalation: false, capabilities: {add: [SYS_ADMIN]}}'
  pf_refused fa proc "procMount Unmasked is refused" \
    "$F: procMount \(container \"c\" must not set securityContext.procMount=\"Unmasked\"\)" \
    '' '' '    securityContext: {allowPrivilegeEscalation: false, procMount: Unmasked}'
  pf_refused fa secc "an Unconfined seccomp profile is refused" \
    "$F: seccompProfile \(pod must not set securityContext.seccompProfile.type to \"Unconfined\"\)" \
    '' '  securityContext: {seccompProfile: {type: Unconfined}}' ''
  pf_refused fa aa "an Unconfined AppArmor profile is refused" \
    "$F: appArmorProfile \(container \"c\" must not set securityContext.appArmorProfile.type to \"Unconfined\"\)" \
    '' '' '    securityContext: {allowPrivilegeEscalation: false, appArmorProfile: {type: Unconfined}}'
  pf_refused fa aaann "the AppArmor annotation unconfined is refused" \
    'forbidden AppArmor profile \(annotation container.apparmor.security.beta.kubernetes.io/c="unconfined"\)' \
    '  annotations: {container.apparmor.security.beta.kubernetes.io/c: unconfined}' '' ''
  pf_refused fa sysctl "an unsafe sysctl is refused" "$F: forbidden sysctls \(kernel.core_pattern\)" \
    '' '  securityContext: {sysctls: [{name: kernel.core_pattern, value: "|/x"}]}' ''
  pf_refused fa selinux "an SELinux user is refused" \
    'seLinuxOptions \(container "c" sets a forbidden type, user or role\)' \
    '' '' '    securityContext: {allowPrivilegeEscalation: false, seLinuxOptions: {user: system_u}}'
  pf_refused fa winhp "Windows HostProcess is refused" 'hostProcess \(pod must not set' \
    '' '  securityContext: {windowsOptions: {hostProcess: true}}' ''
  # host namespaces, hostPath, hostPort, privileged, nodeName: the syncing
  # tenant's own 422 (proxy/api/hostpod.c), before admission
  pf_refused fa priv "privileged is refused (Invalid)" \
    'spec.containers\[0\].securityContext.privileged: Forbidden: privileged is not allowed' \
    '' '' '    securityContext: {privileged: true}'
  pf_refused fa hnet "hostNetwork is refused" 'spec.hostNetwork: Forbidden' '' '  hostNetwork: true' ''
  pf_refused fa hpid "hostPID is refused" 'spec.hostPID: Forbidden' '' '  hostPID: true' ''
  pf_refused fa hpath "hostPath is refused" 'spec.volumes\[0\].hostPath: Forbidden' \
    '' '  volumes: [{name: h, hostPath: {path: /}}]' ''
  pf_refused fa hport "hostPort is refused" 'hostPort: Forbidden' \
    '' '' '    ports: [{containerPort: 80, hostPort: 80}]'
  pf_refused fa probe "a liveness probe aimed at the cloud's metadata service is refused" \
    "$F: probe or lifecycle host \(container \"c\" must not set livenessProbe.httpGet.host=\"169.254.169.254\"\)" \
    '' '' '    livenessProbe: {httpGet: {host: 169.254.169.254, path: /latest/meta-data/, port: 80}}'
  pf_refused fa hook "a preStop hook aimed at another host is refused" \
    'lifecycle.preStop.tcpSocket.host="10.0.0.1"' \
    '' '' '    lifecycle: {preStop: {tcpSocket: {host: 10.0.0.1, port: 22}}}'
  expect "fa: root with baseline's capabilities is admitted (baseline allows it)" 'pod/root created' \
    pf_k fa apply -f <(pf_pod root '' '  securityContext: {runAsUser: 0}' '')
}

pf_no_policy_scheduling() {
  echo "== floor: a tenant without a policy picks no node, runtime, class or device"
  local F='pods "[a-z0-9]+" is forbidden: host floor'
  pf_refused fa nodename "nodeName is refused" 'spec.nodeName: Forbidden' '' '  nodeName: node-1' ''
  pf_refused fa sel "a nodeSelector on a node's hostname is refused" \
    "$F: spec.nodeSelector\[kubernetes.io/hostname\]: node label \"kubernetes.io/hostname\" is not allowed to select nodes; allowed: kubernetes.io/os, kubernetes.io/arch" \
    '' '  nodeSelector: {kubernetes.io/hostname: node-1}' ''
  pf_refused fa mf "node affinity matchFields on a node name is refused" \
    "$F: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms\[0\].matchFields\[0\]: node targeting by name is not allowed" \
    '' '  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [node-1]}]}]}}}' ''
  pf_refused fa cp "node affinity on the control plane's label is refused" \
    'matchExpressions\[0\].key: node label "node-role.kubernetes.io/control-plane" is not allowed' \
    '' '  affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: node-role.kubernetes.io/control-plane, operator: Exists}]}}]}}' ''
  pf_refused fa tolall "a toleration of every taint is refused" \
    "$F: spec.tolerations\[0\]: toleration of every taint is not allowed; allowed: the policy's tolerations and kube's node condition taints" \
    '' '  tolerations: [{operator: Exists}]' ''
  pf_refused fa tolgpu "a toleration of the platform's GPU taint is refused" \
    'toleration of taint "nvidia.com/gpu" is not allowed' \
    '' '  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]' ''
  pf_refused fa snc "system-node-critical is refused" \
    "$F: spec.priorityClassName: \"system-node-critical\" is a host priority class not allowed; allowed: every host class but system-\*" \
    '' '  priorityClassName: system-node-critical' ''
  pf_refused fa scc "system-cluster-critical is refused" '"system-cluster-critical" is a host priority class not allowed' \
    '' '  priorityClassName: system-cluster-critical' ''
  pf_refused fa pcl "KAI's priorityClassName label naming system-node-critical is refused" \
    "$F: metadata.labels\[priorityClassName\]: KAI takes \"system-node-critical\" for the pod's priority class, a host class not allowed" \
    '  labels: {priorityClassName: system-node-critical}' '' ''
  pf_refused fa rt "a runtime class is refused" \
    "$F: spec.runtimeClassName: runtime class \"nvidia\" is not allowed; allowed: none" \
    '' '  runtimeClassName: nvidia' ''
  pf_refused fa pool "KAI's node-pool label is refused" \
    "$F: metadata.labels\[kai.scheduler/node-pool\]: node pool \"pool-b\" is not allowed; allowed: none" \
    '  labels: {kai.scheduler/node-pool: pool-b}' '' ''
  pf_refused fa grp "KAI's runai-gpu-group label is refused" \
    "$F: metadata.labels\[runai-gpu-group\]: set by the scheduler on the host, not by a tenant" \
    '  labels: {runai-gpu-group: g1}' '' ''
  pf_refused fa util "posing as KAI's reservation pod is refused" \
    "metadata.labels\[app\]: \"kai-resource-reservation\" marks KAI's own utility pods" \
    '  labels: {app: kai-resource-reservation}' '' ''
  pf_refused fa rrt "KAI's received-resource-type annotation is refused" \
    'metadata.annotations\[received-resource-type\]: set by the scheduler' \
    '  annotations: {received-resource-type: Regular}' '' ''
  pf_refused fa fcn "gpu-fraction-container-name naming no container is refused" \
    'metadata.annotations\[gpu-fraction-container-name\]: "victim" is not a container of the pod' \
    '  annotations: {gpu-fraction: "0.5", gpu-fraction-container-name: victim}' '' ''
  pf_refused fa hami "HAMi's device choice annotation is refused" \
    'metadata.annotations\[hami.io/vgpu-devices-to-allocate\]: set by the scheduler' \
    '  annotations: {hami.io/vgpu-devices-to-allocate: "GPU-0,NVIDIA,0,0:;"}' '' ''
  pf_refused fa uuid "HAMi's GPU-by-UUID annotation is refused" 'metadata.annotations\[nvidia.com/use-gpuuuid\]' \
    '  annotations: {nvidia.com/use-gpuuuid: GPU-0}' '' ''
  pf_refused fa cdi "a CDI device annotation (the runtime injects the device) is refused" \
    "$F: metadata.annotations\[cdi.k8s.io/gpu\]: read by the node's container runtime or network plugin; not allowed" \
    '  annotations: {cdi.k8s.io/gpu: "nvidia.com/gpu=all"}' '' ''
  pf_refused fa multus "a Multus network of the host is refused" 'metadata.annotations\[k8s.v1.cni.cncf.io/networks\]' \
    '  annotations: {k8s.v1.cni.cncf.io/networks: default/host-net}' '' ''
  pf_refused fa nvd "NVIDIA_VISIBLE_DEVICES is refused" \
    "$F: spec.containers\[0\].env\[0\]: NVIDIA_VISIBLE_DEVICES is read by the NVIDIA container runtime; NVIDIA_\* variables are not allowed" \
    '' '' '    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]'
  pf_refused fa nvc "NVIDIA_DRIVER_CAPABILITIES in an init container is refused" \
    'spec.initContainers\[0\].env\[0\]: NVIDIA_DRIVER_CAPABILITIES' \
    '' '  initContainers: [{name: i, image: busybox, securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}, env: [{name: NVIDIA_DRIVER_CAPABILITIES, value: all}]}]' ''
  pf_refused fa nvf "an envFrom prefix making NVIDIA_ variables is refused" \
    'spec.containers\[0\].envFrom\[0\].prefix: "NVIDIA_" would make NVIDIA_\* variables' \
    '' '' '    envFrom: [{prefix: NVIDIA_, configMapRef: {name: m}}]'
  pf_refused fa nfs "an NFS volume (the node mounts it) is refused" \
    "$F: spec.volumes\[0\].nfs: the node mounts it with its own identity; allowed: none" \
    '' '  volumes: [{name: nf, nfs: {server: 10.0.0.5, path: /}}]' ''
  pf_refused fa git "a gitRepo volume (git runs on the node) is refused" 'spec.volumes\[0\].gitRepo: Forbidden: gitRepo volumes are not allowed: Kubernetes 1.33 disables it' \
    '' '  volumes: [{name: g, gitRepo: {repository: "https://example.com/x.git"}}]' ''
  pf_refused fa flex "a flexVolume (its driver runs on the node) is refused" 'spec.volumes\[0\].flexVolume' \
    '' '  volumes: [{name: f, flexVolume: {driver: example.com/x}}]' ''
  pf_refused fa csi "an inline CSI volume is refused" \
    "$F: spec.volumes\[0\].csi.driver: inline volumes of CSI driver \"secrets-store.csi.k8s.io\" are not allowed; allowed: none" \
    '' '  volumes: [{name: s, csi: {driver: secrets-store.csi.k8s.io}}]' ''
  pf_refused fa aff "pod affinity to pods of other namespaces (the host's) is refused" \
    "$F: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution\[0\].namespaceSelector: pods of other namespaces are the host's; not allowed" \
    '' '  affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, namespaceSelector: {}, labelSelector: {matchLabels: {app: victim}}}]}}' ''
  expect_fail "fa: a ConfigMap key NVIDIA_VISIBLE_DEVICES (for envFrom) is refused" \
    'configmaps "nv" is forbidden: host floor: data\[NVIDIA_VISIBLE_DEVICES\]: envFrom would make it a variable the NVIDIA container runtime obeys' \
    pf_k fa create configmap nv --from-literal=NVIDIA_VISIBLE_DEVICES=all
  expect "fa: ... an ordinary ConfigMap is taken" 'configmap/nv created' pf_k fa create configmap nv --from-literal=A=1
  expect_fail "fa: ... and the key cannot be added later" 'data\[NVIDIA_DRIVER_CAPABILITIES\]' \
    pf_k fa patch configmap nv --type merge -p '{"data":{"NVIDIA_DRIVER_CAPABILITIES":"all"}}'
  expect_fail "fa: a Secret key NVIDIA_VISIBLE_DEVICES is refused too" \
    'secrets "nv" is forbidden: host floor: data\[NVIDIA_VISIBLE_DEVICES\]' \
    pf_k fa create secret generic nv --from-literal=NVIDIA_VISIBLE_DEVICES=all
  pf_k fa create deployment d --image=busybox --dry-run=client -o json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); d["spec"]["template"]["spec"]["runtimeClassName"]="nvidia"; print(json.dumps(d))' >"$E2E_TMP/pf-deploy.json"
  expect_fail "fa: a Deployment whose template names a runtime class is refused" \
    'deployments.apps "d" is forbidden: host floor: spec.runtimeClassName: runtime class "nvidia" is not allowed' \
    pf_k fa apply -f "$E2E_TMP/pf-deploy.json"

  echo "== floor: what the floor leaves a tenant without a policy"
  expect "fa: a host class other than system-* is admitted" 'pod/trainer created' \
    pf_k fa apply -f <(pf_pod trainer '' '  priorityClassName: train' '')
  expect "fa: os/arch selectors and kube's node-condition tolerations are admitted" 'pod/plain created' \
    pf_k fa apply -f <(pf_pod plain '' '  nodeSelector: {kubernetes.io/arch: amd64}
  tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]' '')
  wait_for "fa: host pods" 30 sh -c "[ \$(kubectl --kubeconfig $PF_HOST_KCFG -n kubicle-fa get pods -o name | wc -l) -ge 3 ]"
  expect_eq "host: the host pod of trainer has the host class and its priority" "train 1000" \
    pf_h -n kubicle-fa get pod trainer-x-default-x-fa -o jsonpath='{.spec.priorityClassName} {.spec.priority}'

  echo "== floor: updates are held to it"
  expect_fail "fa: adding runai-gpu-group to a running pod is refused" \
    'pods "plain" is forbidden: host floor: metadata.labels\[runai-gpu-group\]' \
    pf_k fa label pod plain runai-gpu-group=g1
  expect_fail "fa: adding a toleration of every taint is refused" \
    'pods "plain" is forbidden: host floor: spec.tolerations\[2\]: toleration of every taint' \
    pf_k fa patch pod plain --type json -p '[{"op":"add","path":"/spec/tolerations/-","value":{"operator":"Exists"}}]'
  # as a new pod's privileged container is (line 70): an update is held to
  # the create's checks (proxy/api/hostpod.c hostpod_refuse)
  expect_fail "fa: a privileged debug container (kubectl debug --profile=sysadmin) is refused" \
    'The Pod "plain" is invalid: spec.ephemeralContainers\[0\].securityContext.privileged: Forbidden: privileged is not allowed' \
    pf_k fa debug plain --image=busybox --container=dbg --profile=sysadmin -- true
  expect_fail "fa: a debug container with NVIDIA_VISIBLE_DEVICES is refused" \
    'host floor: spec.ephemeralContainers\[0\].env\[0\]: NVIDIA_VISIBLE_DEVICES is read by the NVIDIA container runtime' \
    pf_k fa debug plain --image=busybox --container=dbg2 --env=NVIDIA_VISIBLE_DEVICES=all -- true
  expect_eq "fa: ... and the pod has no ephemeral container" "" \
    pf_k fa get pod plain -o jsonpath='{.spec.ephemeralContainers[*].name}'
  expect "fa: an ordinary label still changes" 'pod/plain labeled' pf_k fa label pod plain team=a
  wait_for "host: label copied" 20 out_is a pf_h -n kubicle-fa get pod plain-x-default-x-fa -o jsonpath='{.metadata.labels.team}'
  expect_eq "host: the host pod has no runai-gpu-group and only its two tolerations" \
    " node.kubernetes.io/not-ready node.kubernetes.io/unreachable" \
    sh -c "kubectl --kubeconfig $PF_HOST_KCFG -n kubicle-fa get pod plain-x-default-x-fa -o jsonpath='{.metadata.labels.runai-gpu-group} {.spec.tolerations[*].key}' | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ \$//'"
  expect_eq "host: only fa's admitted pods exist" \
    "pod/plain-x-default-x-fa pod/root-x-default-x-fa pod/trainer-x-default-x-fa " pf_host_pods fa
}

pf_policy_gives() {
  echo "== floor: a policy gives nodes, a runtime, host classes, a node pool"
  local P='pods "[a-z0-9]+" is forbidden: policy pf-gives'
  expect "fb: the runtime class the policy gives is admitted" 'pod/rt created' \
    pf_k fb apply -f <(pf_pod rt '  labels: {kai.scheduler/node-pool: pool-a}' '  runtimeClassName: nvidia
  priorityClassName: system-cluster-critical
  nodeSelector: {topology.kubernetes.io/zone: z1}
  tolerations: [{key: nvidia.com/gpu, operator: Equal, value: "true", effect: NoSchedule}]' '    env: [{name: NVIDIA_DRIVER_CAPABILITIES, value: compute}]')
  expect "fb: an inline volume of the CSI driver the policy gives is admitted" 'pod/csi created' \
    pf_k fb apply -f <(pf_pod csi '' '  volumes: [{name: s, csi: {driver: secrets-store.csi.k8s.io}}]' '')
  pf_refused fb csi2 "another CSI driver is refused" 'inline volumes of CSI driver "example.com/x" are not allowed; allowed: secrets-store.csi.k8s.io' \
    '' '  volumes: [{name: s, csi: {driver: example.com/x}}]' ''
  pf_refused fb kata "another runtime class is refused" \
    "$P: spec.runtimeClassName: runtime class \"kata\" is not allowed; allowed: nvidia" \
    '' '  runtimeClassName: kata' ''
  pf_refused fb snc "system-node-critical, not in the policy's list, is refused" \
    "$P: spec.priorityClassName: \"system-node-critical\" is a host priority class not allowed; allowed: train, system-cluster-critical" \
    '' '  priorityClassName: system-node-critical' ''
  pf_refused fb other "a host class not in the list is refused" \
    "$P: spec.priorityClassName: \"other\" is a host priority class not allowed; allowed: train, system-cluster-critical" \
    '' '  priorityClassName: other' ''
  pf_refused fb host "a node label beyond the policy's is refused" \
    "$P: spec.nodeSelector\[kubernetes.io/hostname\]: node label \"kubernetes.io/hostname\" is not allowed to select nodes; allowed: topology.kubernetes.io/zone and the policy's nodeSelector" \
    '' '  nodeSelector: {kubernetes.io/hostname: node-1}' ''
  pf_refused fb poolb "another node pool is refused" \
    "$P: metadata.labels\[kai.scheduler/node-pool\]: node pool \"pool-b\" is not allowed; allowed: pool-a" \
    '  labels: {kai.scheduler/node-pool: pool-b}' '' ''
  pf_refused fb tolall "a toleration wider than the policy's is refused" \
    'spec.tolerations\[0\]: toleration of taint "nvidia.com/gpu" is not allowed' \
    '' '  tolerations: [{key: nvidia.com/gpu, operator: Exists}]' ''
  wait_for "fb: host pod" 30 pf_h -n kubicle-fb get pod rt-x-default-x-fb
  expect_eq "host: the pod has the runtime, class, node pool and the policy's node selector" \
    'nvidia system-cluster-critical 2000000000 pool-a gpu z1' \
    pf_h -n kubicle-fb get pod rt-x-default-x-fb \
    -o jsonpath='{.spec.runtimeClassName} {.spec.priorityClassName} {.spec.priority} {.metadata.labels.kai\.scheduler/node-pool} {.spec.nodeSelector.pool} {.spec.nodeSelector.topology\.kubernetes\.io/zone}'
  wait_for "fb: host pod csi" 30 pf_h -n kubicle-fb get pod csi-x-default-x-fb
  expect_eq "host: the csi pod keeps its driver" 'secrets-store.csi.k8s.io' \
    pf_h -n kubicle-fb get pod csi-x-default-x-fb -o jsonpath='{.spec.volumes[?(@.name=="s")].csi.driver}'
  expect_eq "host: only fb's admitted pods exist" "pod/csi-x-default-x-fb pod/rt-x-default-x-fb " pf_host_pods fb
}

pf_weak_policy() {
  echo "== floor: a policy cannot weaken it; only the platform's --floor can"
  pf_refused fc hnet "hostFields: allow does not let hostNetwork through the floor" \
    'pods "hnet" is forbidden: host floor: violates PodSecurity "baseline:latest": host namespaces \(hostNetwork=true\)' \
    '' '  hostNetwork: true' ''
  pf_refused fc cap "podSecurity: privileged does not let SYS_ADMIN through" \
    'host floor: violates PodSecurity "baseline:latest": non-default capabilities' \
    '' '' '    securityContext: {capabilities: {add: [SYS_ADMIN]}}'
  expect "fd (--floor privileged): SYS_ADMIN is admitted, the platform said so" 'pod/cap created' \
    pf_k fd apply -f <(pf_pod cap '' '' '    securityContext: {capabilities: {add: [SYS_ADMIN]}}')
  pf_refused fd rt "fd: --floor privileged still gives no runtime class" \
    'pods "rt" is forbidden: policy pf-weak: spec.runtimeClassName: runtime class "nvidia" is not allowed; allowed: none' \
    '' '  runtimeClassName: nvidia' ''
  wait_for "fd: host pod" 30 pf_h -n kubicle-fd get pod cap-x-default-x-fd
  expect_eq "host: fd's pod has SYS_ADMIN" 'SYS_ADMIN' \
    pf_h -n kubicle-fd get pod cap-x-default-x-fd -o jsonpath='{.spec.containers[0].securityContext.capabilities.add[0]}'
  expect_eq "host: nothing of fc's exists" "" pf_host_pods fc
}

# Images on shared nodes (policies/images.c): kube's AlwaysPullImages under
# the floor, on the tenant's pod as stored and on the host pod, for every
# container kind; a policy relaxes it (imagePullPolicy: any) or limits the
# registries (imageRegistries).
pf_images() {
  echo "== floor: images pull Always (a node's cache is shared); registries by policy"
  expect "fa: a pod asking IfNotPresent is admitted" 'pod/img created' \
    pf_k fa apply -f <(pf_pod img '' '' '    imagePullPolicy: IfNotPresent')
  expect_eq "fa: the stored pod pulls Always, as kube's AlwaysPullImages leaves it" 'Always' \
    pf_k fa get pod img -o jsonpath='{.spec.containers[0].imagePullPolicy}'
  wait_for "fa: host pod img" 30 pf_h -n kubicle-fa get pod img-x-default-x-fa
  expect_eq "host: the host pod pulls Always" 'Always' \
    pf_h -n kubicle-fa get pod img-x-default-x-fa -o jsonpath='{.spec.containers[0].imagePullPolicy}'
  expect "fa: kubectl debug adds an ephemeral container asking IfNotPresent" 'dbg' \
    sh -c "kubectl --kubeconfig $KUBICLE_HOME/tenants/fa/kubeconfig debug img --image=busybox:1.36 -c dbg --image-pull-policy=IfNotPresent --profile=restricted 2>&1; kubectl --kubeconfig $KUBICLE_HOME/tenants/fa/kubeconfig get pod img -o jsonpath='{.spec.ephemeralContainers[*].name}'"
  expect_eq "fa: ... which pulls Always too (kube's plugin skips that subresource; a debug image would come from the node's cache)" \
    'Always' pf_k fa get pod img -o jsonpath='{.spec.ephemeralContainers[0].imagePullPolicy}'
  expect_until "host: the host pod's ephemeral container pulls Always" 'Always' \
    pf_h -n kubicle-fa get pod img-x-default-x-fa -o jsonpath='{.spec.ephemeralContainers[0].imagePullPolicy}'
  expect "fc (imagePullPolicy: any): a pod asking IfNotPresent keeps it" 'pod/img created' \
    pf_k fc apply -f <(pf_pod img '' '' '    imagePullPolicy: IfNotPresent')
  expect_eq "fc: ... as stored" 'IfNotPresent' \
    pf_k fc get pod img -o jsonpath='{.spec.containers[0].imagePullPolicy}'
  wait_for "fc: host pod img" 30 pf_h -n kubicle-fc get pod img-x-default-x-fc
  expect_eq "host: ... and on the host" 'IfNotPresent' \
    pf_h -n kubicle-fc get pod img-x-default-x-fc -o jsonpath='{.spec.containers[0].imagePullPolicy}'
  expect_fail "fb: an image from outside the policy's registries is refused, naming the field" \
    'pods "evil" is forbidden: policy pf-gives: spec.containers\[0\].image: image "evil.io/team-a/app:1" is not from an allowed registry; allowed: docker.io/library/, registry.example.com/team-b' \
    pf_k fb apply -f <(pf_pod evil '' '' '' | sed 's|image: busybox|image: evil.io/team-a/app:1|')
  expect_fail "fb: ... and in a Deployment's template" \
    'deployments.apps "evil" is forbidden: policy pf-gives: .*spec.containers\[0\].image: image "registry.example.com/team-bb/x" is not from an allowed registry' \
    pf_k fb create deployment evil --image=registry.example.com/team-bb/x
  expect_eq "host: nothing of them reached the host" "" \
    sh -c "kubectl --kubeconfig $PF_HOST_KCFG -n kubicle-fb get pods -o name | grep evil"
}

policies_floor_suite() {
  export KUBICLE_HOME=$E2E_TMP/pf-home
  start_server pfhost --standin-exec || { fail "floor: host stand-in did not start"; return; }
  PF_HOST_KCFG=$KCFG
  start_scheduler pfhost
  pf_h create priorityclass train --value=1000 >/dev/null
  pf_h create priorityclass other --value=500 >/dev/null
  cat >"$E2E_TMP/pf-gives.yaml" <<'YAML'
name: pf-gives
podSecurity: restricted
nodeSelector: {pool: gpu}
nodeLabels: [topology.kubernetes.io/zone]
tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
runtimeClasses: [nvidia]
priorityClasses: [train, system-cluster-critical]
nodePools: [pool-a]
nvidiaEnv: allow
csiDrivers: [secrets-store.csi.k8s.io]
imageRegistries: [docker.io/library/, registry.example.com/team-b]
YAML
  printf 'name: pf-weak\npodSecurity: privileged\nhostFields: allow\nimagePullPolicy: any\n' >"$E2E_TMP/pf-weak.yaml"
  local out
  out=$("$KUBICLE" create fa --host-kubeconfig "$PF_HOST_KCFG" --queue qfa --wait 2>&1) ||
    { fail "floor: tenant fa: $out"; return; }
  if grep -q 'policy: none (the host floor alone); host floor: baseline' <<<"$out"
  then pass "create without --policy says the host floor applies"
  else fail "create output: $out"; fi
  "$KUBICLE" create fb --host-kubeconfig "$PF_HOST_KCFG" --queue qfb --policy "$E2E_TMP/pf-gives.yaml" \
    --wait >/dev/null 2>&1 || { fail "floor: tenant fb"; return; }
  "$KUBICLE" create fc --host-kubeconfig "$PF_HOST_KCFG" --queue qfc --policy "$E2E_TMP/pf-weak.yaml" \
    --wait >/dev/null 2>&1 || { fail "floor: tenant fc"; return; }
  "$KUBICLE" create fd --host-kubeconfig "$PF_HOST_KCFG" --queue qfd --policy "$E2E_TMP/pf-weak.yaml" \
    --floor privileged --wait >/dev/null 2>&1 || { fail "floor: tenant fd"; return; }
  local t
  for t in fa fb fc fd; do
    [ -f "$KUBICLE_HOME/tenants/$t/supervisor.pid" ] &&
      E2E_PIDS+=("$(cat "$KUBICLE_HOME/tenants/$t/supervisor.pid")")
  done
  expect "list: fa has no policy and the baseline floor" 'fa +Running +https://[^ ]+ +qfa +none +baseline ' \
    "$KUBICLE" list
  expect "list: fd's floor is privileged" 'fd +Running .* +privileged ' "$KUBICLE" list fd
  expect "list -o json: floor" '"floor": "baseline"' "$KUBICLE" list fa -o json
  expect_fail "create: a bad --floor is refused" 'floor takes privileged, baseline or restricted' \
    "$KUBICLE" create fe --floor lax
  wait_for "fa: the host class train is copied into the tenant" 30 pf_k fa get priorityclass train
  wait_for "fb: the host class other is copied into the tenant" 30 pf_k fb get priorityclass other
  pf_no_policy_security
  pf_no_policy_scheduling
  pf_policy_gives
  pf_weak_policy
  pf_images
  for t in fa fb fc fd; do
    cp "$KUBICLE_HOME/tenants/$t/server.log" "$E2E_TMP/tenant-$t.log" 2>/dev/null
    "$KUBICLE" delete "$t" >/dev/null 2>&1
  done
}
