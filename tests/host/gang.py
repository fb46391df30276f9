# SPDX-License-Identifier: Apache-2.0
"""The test scheduler's three profiles (scheduler.py --profile): how KAI
Scheduler, Volcano and Kueue decide which pending pods to place, as their
sources show. Each rule names the function it models (sources read: NVIDIA/
KAI-Scheduler, volcano-sh/volcano, kubernetes-sigs/kueue, March 2026).

Common to all three: a pod is placed only as a member of its group, a group
only when all of its minimum fits (queue quota and nodes) at once; members
beyond the minimum then come one by one. A group that does not fit leaves
every pending member Pending. The group's size is read at every pass, so a
PodGroup whose minMember is patched (a scaled gang) is scheduled as it says
now.

Where each says why a group waits: KAI and Volcano on the pods (a Warning
Unschedulable event, PodScheduled False); Kueue on the group's Workload
(QuotaReserved False with its reason and message, an event on the
Workload), its pods only gated. Kueue also drops a group whose members'
counts differ and stops an admitted one that grew past its Workload.
"""

import hashlib
import time

GPU = "nvidia.com/gpu"


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def crd(group, version, plural, kind, scope="Namespaced"):
    """A reduced CustomResourceDefinition: spec and status keep any field (the
    real charts carry full schemas; the scheduler reads only what is named in
    this file)."""
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": kind + "List"},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "properties": {"spec": loose, "status": loose}}}}]}}


# KAI: pkg/apis/scheduling/v2alpha2/podgroup_types.go (PodGroup: minMember,
# queue, priorityClassName, topologyConstraint, subGroups[name, minMember]).
# Volcano: staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/types.go
# (PodGroup: minMember, minTaskMember, queue, priorityClassName,
# minResources; Queue: capability). Kueue: apis/kueue/v1beta1 (LocalQueue
# spec.clusterQueue; ClusterQueue spec.resourceGroups[].flavors[].resources[]
# {name, nominalQuota}).
KAI_PG = "/apis/scheduling.run.ai/v2alpha2"
VC = "/apis/scheduling.volcano.sh/v1beta1"
KQ = "/apis/kueue.x-k8s.io/v1beta1"
CRDS = [
    crd("scheduling.run.ai", "v2alpha2", "podgroups", "PodGroup"),
    crd("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup"),
    crd("scheduling.volcano.sh", "v1beta1", "queues", "Queue", "Cluster"),
    crd("kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue"),
    crd("kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", "Cluster"),
    crd("kueue.x-k8s.io", "v1beta1", "workloads", "Workload"),
]

# Kueue's pod webhook (pkg/controller/jobs/pod/pod_webhook.go
# validatePodGroupMetadata, reached from ValidateCreate through
# validateCommon; failurePolicy fail): a pod whose group name is set (the
# kueue.x-k8s.io/pod-group-name label, or the annotation of that name with
# the WorkloadIdentifierAnnotations gate, utilpod.GetPodGroupName) without
# the kueue.x-k8s.io/pod-group-total-count annotation is refused, and so is
# the count without a name. The stand-in has no webhook server for it: a
# ValidatingAdmissionPolicy refuses the same pods, in the webhook's words.
KUEUE_NAME = "kueue.x-k8s.io/pod-group-name"
KUEUE_COUNT = "kueue.x-k8s.io/pod-group-total-count"
_HAS_NAME = ("(has(object.metadata.labels) && '%s' in object.metadata.labels) || "
             "(has(object.metadata.annotations) && '%s' in object.metadata.annotations)"
             % (KUEUE_NAME, KUEUE_NAME))
_HAS_COUNT = "has(object.metadata.annotations) && '%s' in object.metadata.annotations" % KUEUE_COUNT
KUEUE_WEBHOOK = [
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
     "metadata": {"name": "vpod.kb.io"},
     "spec": {"failurePolicy": "Fail",
              "matchConstraints": {"resourceRules": [{
                  "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                  "resources": ["pods"]}]},
              "validations": [
                  {"expression": "!(%s) || (%s)" % (_HAS_NAME, _HAS_COUNT),
                   "message": "admission webhook \"vpod.kb.io\" denied the request: "
                   "metadata.annotations[%s]: Required value: both the '%s' annotation "
                   "and the '%s' annotation should be set" % (KUEUE_COUNT, KUEUE_COUNT,
                                                            KUEUE_NAME)},
                  {"expression": "!(%s) || (%s)" % (_HAS_COUNT, _HAS_NAME),
                   "message": "admission webhook \"vpod.kb.io\" denied the request: "
                   "metadata.labels[%s]: Required value: both the '%s' annotation and "
                   "the '%s' label should be set" % (KUEUE_NAME, KUEUE_COUNT, KUEUE_NAME)}]}},
    {"apiVersion": "admissionregistration.k8s.io/v1",
     "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "vpod.kb.io"},
     "spec": {"policyName": "vpod.kb.io", "validationActions": ["Deny"]}},
]


def meta(o):
    return o.get("metadata", {})


def ann(o):
    return meta(o).get("annotations") or {}


def labels(o):
    return meta(o).get("labels") or {}


def alive(p):
    return not meta(p).get("deletionTimestamp") and \
        p.get("status", {}).get("phase") not in ("Succeeded", "Failed")


class Group:
    """What the scheduler knows of one group: its members (pods), the minimum
    that must be placed together, per-subgroup minimums (KAI), its queue."""

    def __init__(self, key, queue, min_member, members, subgroups=None, obj=None):
        self.key, self.queue, self.min = key, queue, max(1, int(min_member or 1))
        self.members, self.subgroups, self.obj = members, subgroups or [], obj


class Kai:
    """KAI Scheduler: the pod-grouper and the scheduler's gang admission."""
    scheduler_name = "kai-scheduler"
    component = "kai-scheduler"

    def __init__(self, sched):
        self.s = sched

    def queues(self):
        st, ql = self.s.api.call("GET", "/apis/scheduling.run.ai/v2/queues")
        return {meta(q)["name"]: self.s.quota_of(q) for q in ql.get("items", [])} \
            if st == 200 else {}

    def queue_of_pod(self, p):
        return labels(p).get("kai.scheduler/queue")

    def group_pods(self, pods):
        """The pod-grouper (pkg/podgrouper/pod_controller.go Reconcile): a pod
        of schedulerName kai-scheduler that has the pod-group-name annotation
        and no ownerReferences is skipped (isOrphanPodWithPodGroup): its group
        must exist already. Any other pod gets a PodGroup from its top owner
        (GetPodOwners, GetPGMetadata) and the annotation
        (assignPodToGroupAndSubGroup). A syncer's host pod has no owners, so
        the default grouper's: the pod itself, minMember 1, the queue of its
        kai.scheduler/queue label."""
        for p in pods:
            md = meta(p)
            if p["spec"].get("schedulerName") != self.scheduler_name or \
                    p["spec"].get("nodeName") or md.get("deletionTimestamp"):
                continue
            if "pod-group-name" in ann(p):
                continue  # isOrphanPodWithPodGroup, or already grouped
            name = f"pg-{md['name']}-{md['uid']}"[:253]
            pg = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                  "metadata": {"name": name, "namespace": md["namespace"],
                               "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                                    "name": md["name"], "uid": md["uid"]}]},
                  "spec": {"minMember": 1, "queue": self.queue_of_pod(p) or "default-queue"}}
            self.s.api.call("POST", f"{KAI_PG}/namespaces/{md['namespace']}/podgroups", pg)
            self.s.api.call("PATCH", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                            {"metadata": {"annotations": {"pod-group-name": name}}},
                            "application/merge-patch+json")

    def groups(self, pods):
        """The scheduler sees pods only through PodGroups
        (pkg/scheduler/cache/cluster_info/cluster_info.go snapshotPodGroups:
        each PodGroup's pods come from podByPodGroupIndexer, the pods whose
        pod-group-name annotation names it; a pod whose group does not exist
        is in no job and is never considered, and gets no event)."""
        st, pl = self.s.api.call("GET", f"{KAI_PG}/podgroups")
        out = []
        for pg in pl.get("items", []) if st == 200 else []:
            md, spec = meta(pg), pg.get("spec", {})
            members = [p for p in pods if meta(p)["namespace"] == md["namespace"] and
                       ann(p).get("pod-group-name") == md["name"] and
                       p["spec"].get("schedulerName") == self.scheduler_name]
            out.append(Group(md["namespace"] + "/" + md["name"], spec.get("queue"),
                             spec.get("minMember", 1), members,
                             [(sg.get("name"), int(sg.get("minMember") or 0))
                              for sg in spec.get("subGroups") or []], pg))
        return out

    def subgroup_of(self, p):
        return labels(p).get("kai.scheduler/subgroup-name")

    def not_ready(self, g, alive_n):
        """recordJobNotReadyEvent (pkg/scheduler/cache/status_updater/
        default_status_updater.go): a Normal NotReady event on the PodGroup,
        nothing on the pods."""
        md = meta(g.obj)
        self.s.event_on({"kind": "PodGroup", "apiVersion": "scheduling.run.ai/v2alpha2",
                         "name": md["name"], "namespace": md["namespace"],
                         "uid": md.get("uid", "")},
                        "NotReady", f"Job is not ready for scheduling. Waiting for {g.min} "
                        f"pods, currently {alive_n} exist, 0 are gated", "Normal", self.component)

    def unschedulable(self, p, msg):
        """markTaskUnschedulable (default_status_updater.go): a Warning
        Unschedulable event on each pending pod and its PodScheduled condition
        False, reason Unschedulable."""
        self.s.unschedulable(p, msg, self.component)

    def pending(self, g, pending, reason, msg):
        """The group does not fit: each pending member says why."""
        for p in pending:
            self.unschedulable(p, msg)

    def admitted(self, g):
        pass

    def over_quota(self, g, q, used, need, cap, n):
        """The queue's quota is short for the group's minimum together
        (KAI proportion plugin, Volcano capacity/proportion enqueue)."""
        return "Unschedulable", (
            f"queue over quota: queue {q} uses {used} of {cap} GPUs, the pod group {g.key} "
            f"needs {need} for {n} pods together (minMember {g.min})")


class Volcano(Kai):
    """Volcano: the PodGroup controller and the scheduler's gang plugin."""
    scheduler_name = "volcano"
    component = "volcano"

    def queues(self):
        st, ql = self.s.api.call("GET", f"{VC}/queues")
        out = {}
        for q in ql.get("items", []) if st == 200 else []:
            cap = q.get("spec", {}).get("capability", {}).get(GPU)
            out[meta(q)["name"]] = None if cap is None else int(cap)
        return out

    def queue_of_pod(self, p):
        return ann(p).get("scheduling.volcano.sh/queue-name")

    def group_pods(self, pods):
        """The PodGroup controller (pkg/controllers/podgroup/pg_controller.go
        processNextReq): a pod of the scheduler's names whose
        scheduling.k8s.io/group-name annotation is set is skipped ("has
        created podgroup"); any other gets podgroup-<uid>, minMember 1, its
        queue annotation's queue (createNormalPodPGIfNotExist)."""
        for p in pods:
            md = meta(p)
            if p["spec"].get("schedulerName") != self.scheduler_name or \
                    p["spec"].get("nodeName") or md.get("deletionTimestamp"):
                continue
            if ann(p).get("scheduling.k8s.io/group-name"):
                continue
            name = f"podgroup-{md['uid']}"
            pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                  "metadata": {"name": name, "namespace": md["namespace"]},
                  "spec": {"minMember": 1, "queue": self.queue_of_pod(p) or "default"}}
            self.s.api.call("POST", f"{VC}/namespaces/{md['namespace']}/podgroups", pg)
            self.s.api.call("PATCH", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                            {"metadata": {"annotations": {"scheduling.k8s.io/group-name": name}}},
                            "application/merge-patch+json")

    def groups(self, pods):
        """The scheduler's cache (pkg/scheduler/cache/cache.go Snapshot): a
        job whose PodGroup is nil is ignored ("The scheduling spec of Job ...
        is nil, ignore it"); pods join their job by the group-name
        annotation. The gang plugin admits a job only when minMember of its
        tasks can be allocated together (pkg/scheduler/plugins/gang)."""
        st, pl = self.s.api.call("GET", f"{VC}/podgroups")
        out = []
        for pg in pl.get("items", []) if st == 200 else []:
            md, spec = meta(pg), pg.get("spec", {})
            members = [p for p in pods if meta(p)["namespace"] == md["namespace"] and
                       ann(p).get("scheduling.k8s.io/group-name") == md["name"] and
                       p["spec"].get("schedulerName") == self.scheduler_name]
            out.append(Group(md["namespace"] + "/" + md["name"], spec.get("queue"),
                             spec.get("minMember", 1), members, None, pg))
        return out

    def subgroup_of(self, p):
        return None

    def not_ready(self, g, alive_n):
        """The gang plugin's job-not-ready reason on the PodGroup
        (pkg/scheduler/plugins/gang: NotEnoughPodsReason)."""
        md = meta(g.obj)
        self.s.event_on({"kind": "PodGroup", "apiVersion": "scheduling.volcano.sh/v1beta1",
                         "name": md["name"], "namespace": md["namespace"],
                         "uid": md.get("uid", "")}, "Unschedulable",
                        f"{g.min - alive_n}/{g.min} tasks in gang unschedulable: "
                        "NotEnoughPods", "Warning", self.component)


class Kueue(Kai):
    """Kueue's pod integration: its webhook (a policy here), one Workload per
    pod group (or lone pod) that carries why it waits, and group admission;
    admitted pods are ungated and the default scheduler binds them."""
    scheduler_name = None
    component = "kueue-admission"

    def __init__(self, sched):
        super().__init__(sched)
        self.flavors = {}   # local queue -> its ClusterQueue's flavor of nvidia.com/gpu
        self.cqs = {}       # local queue -> ClusterQueue name
        self.written = {}   # workload key -> (spec, status) last written

    def queues(self):
        """LocalQueue -> ClusterQueue -> nominalQuota of nvidia.com/gpu."""
        st, cl = self.s.api.call("GET", f"{KQ}/clusterqueues")
        cqs, flavor = {}, {}
        for cq in cl.get("items", []) if st == 200 else []:
            total = None
            for rg in cq.get("spec", {}).get("resourceGroups", []):
                for fl in rg.get("flavors", []):
                    for r in fl.get("resources", []):
                        if r.get("name") == GPU:
                            total = (total or 0) + int(r.get("nominalQuota", 0))
                            flavor.setdefault(meta(cq)["name"], fl.get("name"))
            cqs[meta(cq)["name"]] = total
        st, ll = self.s.api.call("GET", f"{KQ}/localqueues")
        out = {}
        for lq in ll.get("items", []) if st == 200 else []:
            cq = lq.get("spec", {}).get("clusterQueue")
            if cq in cqs:
                key = meta(lq)["namespace"] + "/" + meta(lq)["name"]
                out[key] = cqs[cq]
                self.cqs[key] = cq
                self.flavors[key] = flavor.get(cq, "default")
        return out

    def queue_of_pod(self, p):
        q = labels(p).get("kueue.x-k8s.io/queue-name")
        return meta(p)["namespace"] + "/" + q if q else None

    def group_pods(self, pods):
        pass

    def groups(self, pods):
        """Pods with a queue-name label are Kueue's (the webhook gates them:
        kueue.x-k8s.io/admission). A pod group is one Workload named after
        the group (pod_controller.go workloadName; a lone pod's is
        pod-<name>-<hash>, GetWorkloadNameForPod) whose count is the
        pod-group-total-count annotation (groupTotalCount,
        ConstructComposableWorkload), owned by every member
        (SetOwnerReference). Members whose counts differ compose no Workload
        (validatePodGroupMetadata: UnretryableError). The Workload is
        admitted whole when its ClusterQueue has quota for every pod set
        (pkg/scheduler), and its pods then lose their gate."""
        out, by = [], {}
        for p in pods:
            if p["spec"].get("schedulerName") not in (None, "", "default-scheduler") or \
                    not self.queue_of_pod(p):
                continue
            gname = labels(p).get(KUEUE_NAME) or ann(p).get(KUEUE_NAME)
            if not gname:
                md = meta(p)
                h = hashlib.sha1(f"{md['name']}/{md['uid']}/Pod".encode()).hexdigest()[:5]
                out.append(Group(md["namespace"] + "/" + f"pod-{md['name']}"[:247] + "-" + h,
                                 self.queue_of_pod(p), 1, [p]))
                continue
            key = meta(p)["namespace"] + "/" + gname
            g = by.get(key)
            if g is None:
                g = by[key] = Group(key, self.queue_of_pod(p),
                                    int(ann(p).get(KUEUE_COUNT, "1") or 1), [])
                g.counts = set()
                out.append(g)
            g.members.append(p)
            g.counts.add(ann(p).get(KUEUE_COUNT))
        workloads = self.workloads()
        for g in [g for g in out if len(getattr(g, "counts", ())) > 1]:
            out.remove(g)  # validatePodGroupMetadata: counts differ, no Workload
        for g in out:
            self.stop_if_grown(g, workloads.get(g.key))
        return out

    def workloads(self):
        st, wl = self.s.api.call("GET", f"{KQ}/workloads")
        return {meta(w)["namespace"] + "/" + meta(w)["name"]: w
                for w in (wl.get("items", []) if st == 200 else [])}

    def stop_if_grown(self, g, wl):
        """A group whose count grew past its admitted Workload's no longer
        matches it (pod_controller.go equivalentToWorkload: a pod set's count
        below the group's); the reconciler stops the running group, deleting
        its pods (jobframework reconciler.go ensureOneWorkload -> stopJob,
        pod_controller.go Stop), and the Workload is made anew."""
        if wl is None:
            return
        count = sum(int(ps.get("count", 0)) for ps in wl.get("spec", {}).get("podSets", []))
        if count >= g.min:
            return
        admitted = any(c.get("type") == "Admitted" and c.get("status") == "True"
                       for c in wl.get("status", {}).get("conditions", []))
        ns, name = g.key.split("/", 1)
        if admitted:
            for p in g.members:
                if p["spec"].get("nodeName") and alive(p):
                    self.s.api.call("DELETE", f"/api/v1/namespaces/{ns}/pods/"
                                    f"{meta(p)['name']}")
        self.s.api.call("DELETE", f"{KQ}/namespaces/{ns}/workloads/{name}")
        self.written.pop(g.key, None)

    def subgroup_of(self, p):
        return None

    def not_ready(self, g, alive_n):
        """validatePodGroupMetadata: a group with fewer runnable pods than its
        count composes no Workload; a Warning ErrWorkloadCompose event on the
        pod being reconciled."""
        for p in g.members:
            if not p["spec"].get("nodeName"):
                self.s.unschedulable(p, f"'{g.key.split('/', 1)[1]}' group has fewer runnable "
                                     "pods than expected", self.component,
                                     "SchedulingGated", "ErrWorkloadCompose",
                                     condition=False)
                break

    def write_workload(self, g, conds):
        """The group's Workload, made or its status updated (written when it
        changes)."""
        ns, name = g.key.split("/", 1)
        lone = len(g.members) == 1 and not (labels(g.members[0]).get(KUEUE_NAME) or
                                            ann(g.members[0]).get(KUEUE_NAME))
        owners = [{"apiVersion": "v1", "kind": "Pod", "name": meta(p)["name"],
                   "uid": meta(p)["uid"], **({"controller": True} if lone else {})}
                  for p in g.members]
        spec = {"queueName": g.queue.split("/", 1)[1],
                "podSets": [{"name": "main", "count": g.min}]}
        status = {"conditions": conds}
        if self.written.get(g.key) == (owners, spec, status):
            return
        path = f"{KQ}/namespaces/{ns}/workloads"
        wl = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
              "metadata": {"name": name, "namespace": ns, "ownerReferences": owners,
                           "annotations": {} if lone else
                           {"kueue.x-k8s.io/is-group-workload": "true"}},
              "spec": spec}
        st, have = self.s.api.call("GET", f"{path}/{name}")
        if st != 200:
            st, have = self.s.api.call("POST", path, wl)
            if st != 201:
                return
        elif have.get("metadata", {}).get("ownerReferences") != owners:
            have["metadata"]["ownerReferences"] = owners
            st, have = self.s.api.call("PUT", f"{path}/{name}", have)
            if st != 200:
                return
        have["status"] = status
        st, _ = self.s.api.call("PUT", f"{path}/{name}/status", have)
        if st == 200:
            self.written[g.key] = (owners, spec, status)

    def pending(self, g, pending, reason, msg):
        """The scheduler's word on a Workload it cannot admit
        (scheduler.go requeueAndUpdate): QuotaReserved False with the
        reason and the flavor assigner's message, a Warning event of that
        reason on the Workload. The pods stay gated, with the condition
        kube-scheduler gives a gated pod and no event."""
        ns, name = g.key.split("/", 1)
        if self.s.warned.get(g.key) == msg:
            return
        self.s.warned[g.key] = msg
        self.write_workload(g, [{"type": "QuotaReserved", "status": "False", "reason": reason,
                                 "message": msg, "lastTransitionTime": now()}])
        self.s.event_on({"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta1",
                         "name": name, "namespace": ns}, reason, msg, "Warning",
                        "kueue-admission")
        for p in pending:
            self.s.unschedulable(p, "Scheduling is blocked due to non-empty scheduling gates",
                                 self.component, "SchedulingGated", None)

    def admitted(self, g):
        """workload.go SetQuotaReservation and admissionchecks.go: QuotaReserved
        and Admitted True."""
        self.s.warned.pop(g.key, None)
        cq = self.cqs.get(g.queue, "")
        self.write_workload(g, [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "message": f"Quota reserved in ClusterQueue {cq}", "lastTransitionTime": now()},
            {"type": "Admitted", "status": "True", "reason": "Admitted",
             "message": "The workload is admitted", "lastTransitionTime": now()}])

    def over_quota(self, g, q, used, need, cap, n):
        """flavorassigner.go fitsResourceQuota: past the ClusterQueue's
        capacity, or past what is unused now (the reasons ExceedsMaxQuota and
        WaitingForQuota, scheduler.go's fallback Pending)."""
        fl = self.flavors.get(q, "default")
        if need > cap:
            return "ExceedsMaxQuota", (
                f"couldn't assign flavors to pod set main: insufficient quota for {GPU} in "
                f"flavor {fl}, previously considered podsets requests (0) + current podset "
                f"request ({need}) > maximum capacity ({cap})")
        return "Pending", (f"couldn't assign flavors to pod set main: insufficient unused quota "
                           f"for {GPU} in flavor {fl}, {used + need - cap} more needed")

    def unschedulable(self, p, msg):
        self.s.unschedulable(p, msg, self.component, "SchedulingGated", None)


PROFILES = {"kai": Kai, "volcano": Volcano, "kueue": Kueue}


def place(nodes, cap, node_used, pods, gpus_of):
    """First-fit nodes for every pod of `pods`, or None when one does not
    fit; node_used is not changed."""
    trial, out = dict(node_used), []
    for p in pods:
        need = gpus_of(p)
        n = next((n for n in nodes if trial[n] + need <= cap), None)
        if n is None:
            return None
        trial[n] += need
        out.append(n)
    return out


def must_place(g, sub_of):
    """The pending members that must be placed together for group g to run:
    enough to bring its running members to minMember and each subgroup to its
    own (KAI podgroup_info IsReadyForScheduling / subgroup minAvailable)."""
    running = [p for p in g.members if alive(p) and p["spec"].get("nodeName")]
    pending = [p for p in g.members if alive(p) and not p["spec"].get("nodeName")]
    chosen = []
    for name, mn in g.subgroups:
        have = sum(1 for p in running if sub_of(p) == name)
        want = [p for p in pending if sub_of(p) == name][:max(0, mn - have)]
        chosen += want
    rest = [p for p in pending if p not in chosen]
    extra = max(0, g.min - len(running) - len(chosen))
    chosen += rest[:extra]
    return chosen, pending, running
