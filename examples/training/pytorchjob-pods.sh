#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pytorchjob-pods.sh NAME [kubectl args...]: makes the pods of PyTorchJob
# NAME as Kubeflow's training-operator would (the demo tenant runs none):
# NAME-<type>-<i> from each replica spec's template, owned by the PyTorchJob
# (controller), labelled training.kubeflow.org/job-name, replica-type and
# replica-index. Kubicle's syncer finds their gang through that owner.
set -euo pipefail
name=$1; shift
k=(kubectl "$@")
uid=$("${k[@]}" get pytorchjob "$name" -o jsonpath='{.metadata.uid}')
for type in Master Worker; do
  n=$("${k[@]}" get pytorchjob "$name" -o jsonpath="{.spec.pytorchReplicaSpecs.$type.replicas}")
  tmpl=$("${k[@]}" get pytorchjob "$name" -o jsonpath="{.spec.pytorchReplicaSpecs.$type.template.spec}")
  [ -n "$n" ] || continue
  lower=$(tr '[:upper:]' '[:lower:]' <<<"$type")
  for i in $(seq 0 $((n - 1))); do
    "${k[@]}" apply -f - >/dev/null <<JSON
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$name-$lower-$i",
   "labels": {"training.kubeflow.org/job-name": "$name",
              "training.kubeflow.org/replica-type": "$lower",
              "training.kubeflow.org/replica-index": "$i"},
   "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                        "name": "$name", "uid": "$uid", "controller": true,
                        "blockOwnerDeletion": true}]},
 "spec": $(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); s.setdefault("restartPolicy","Never"); print(json.dumps(s))' "$tmpl")}
JSON
  done
done
