#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests: start the real kubicle binary on 127.0.0.1 and drive it
# with the installed kubectl binaries and curl.
# Usage: run.sh PATH/TO/kubicle [PATH/TO/kubicle-standin]
# The host stand-in (tests/host) defaults to $KUBICLE_STANDIN, else to the one
# built beside kubicle (BUILD/tests/host/kubicle-standin).
set -u
KUBICLE=$(readlink -f "${1:?usage: run.sh PATH/TO/kubicle [PATH/TO/kubicle-standin]}")
KUBICLE_STANDIN=$(readlink -f "${2:-${KUBICLE_STANDIN:-$(dirname "$KUBICLE")/../tests/host/kubicle-standin}}")
[ -x "$KUBICLE_STANDIN" ] || { echo "run.sh: no host stand-in at $KUBICLE_STANDIN"; exit 1; }
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
. "$here/t_kubectl.sh"
. "$here/t_server.sh"
. "$here/t_rbac.sh"
. "$here/t_crd.sh"
. "$here/t_controllers.sh"
. "$here/t_syncer.sh"
. "$here/t_policies.sh"
. "$here/t_tenants.sh"
. "$here/t_manifest.sh"
. "$here/t_admission.sh"
. "$here/t_openapi2.sh"
. "$here/t_kinds.sh"
. "$here/t_dns.sh"
. "$here/t_spdy.sh"
. "$here/t_clients.sh"
. "$here/t_metrics_prom.sh"
. "$here/t_metrics.sh"
. "$here/t_hpa.sh"
. "$here/t_csr.sh"
. "$here/t_webhookcfg.sh"
. "$here/t_vap.sh"
. "$here/t_webhook.sh"
. "$here/t_crdrules.sh"
. "$here/t_crdsets.sh"
. "$here/t_vapeval.sh"
. "$here/t_apiservice.sh"
. "$here/t_pdb.sh"
. "$here/t_standin.sh"

GSDK=/usr/lib/google-cloud-sdk/bin
start_server main || exit 1
server_suite_basic
standin_suite
clients_suite_python
kubectl_suite "$(command -v kubectl)" e2e-path path
for v in 1.33 1.30; do
  if [ -x "$GSDK/kubectl.$v" ]; then kubectl_suite "$GSDK/kubectl.$v" "e2e-${v/./-}" "$v"
  else fail "kubectl.$v is not installed in $GSDK"; fi
done
crd_suite_kubectl "$(command -v kubectl)" path
for v in 1.33 1.30; do
  [ -x "$GSDK/kubectl.$v" ] && crd_suite_kubectl "$GSDK/kubectl.$v" "k${v/./-}"
done
crd_suite_tenants
crd_suite_versions
crd_suite_finalize
crd_suite_names
rbac_suite "$(command -v kubectl)"
for v in 1.27 1.32; do
  [ -x "$GSDK/kubectl.$v" ] && rbac_old_kubectl "$GSDK/kubectl.$v"
done
server_suite_bad_input
server_suite_stalled_watch
server_suite_watch_churn
server_suite_compaction
server_suite_restart
controllers_suite
pdb_suite
syncer_suite
policies_suite
manifest_suite
admission_suite
tenants_suite
openapi2_suite
kinds_suite
dns_suite
metrics_prom_suite
metrics_suite
hpa_suite
csr_suite
webhookcfg_suite
vapcfg_suite
webhook_suite
crdrules_suite
crdsets_suite
vap_suite
apiservice_suite
e2e_summary
