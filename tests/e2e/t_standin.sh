# SPDX-License-Identifier: Apache-2.0
# The host stand-in is test-only (tests/host, kubicle-standin): kubicle has
# none of it (no --standin-exec, no KAI Queue kind, no exec of its own), and
# the stand-in has all of it (Queue as a CRD, exec as local processes, pods
# with host fields accepted). Sourced by run.sh; the main server must run.

standin_suite() {
  echo "== stand-in: test-only"
  local K=(kubectl --kubeconfig "$KCFG")
  expect_fail "kubicle serve --standin-exec is an unknown flag" "unrecognized option '--standin-exec'" \
    "$KUBICLE" serve --data-dir "$E2E_TMP/nostandin" --standin-exec
  # each count below is printed only when the output it reads is the real
  # one (the help's --data-dir, the binary's proxy_start, discovery's pods)
  expect_eq "kubicle serve --help names no stand-in" 0 \
    sh -c "h=\$('$KUBICLE' serve --help 2>&1); echo \"\$h\" | grep -q -- --data-dir && echo \"\$h\" | grep -ci standin"
  if command -v nm >/dev/null; then
    expect_eq "the kubicle binary has no stand-in symbol" 0 \
      sh -c "s=\$(nm '$KUBICLE'); echo \"\$s\" | grep -qw proxy_start && echo \"\$s\" | grep -ci standin"
  fi
  expect_eq "a plain server's discovery has no queues.scheduling.run.ai" 0 \
    sh -c "d=\$(kubectl --kubeconfig '$KCFG' api-resources --no-headers); echo \"\$d\" | grep -qw pods && echo \"\$d\" | grep -c 'scheduling.run.ai'"
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: sti, namespace: default}\nspec:\n  nodeName: node-1\n  containers: [{name: c, image: busybox}]\n' |
    "${K[@]}" apply -f - >/dev/null
  expect_fail "a plain server runs no exec" 'pods/exec is not served here: this server runs no pods' \
    "${K[@]}" exec sti -- true
  expect_eq "a plain server's pod log is empty" "" "${K[@]}" logs sti
  "${K[@]}" delete pod sti --wait=false >/dev/null 2>&1

  local saved=("$KCFG" "$SERVER_URL" "$DATA_DIR" "$SERVER_PID")
  start_server stihost --standin-exec || { fail "stand-in did not start"; return; }
  K=(kubectl --kubeconfig "$KCFG")
  expect "the stand-in serves KAI's Queue (a CRD it made)" '^queues +scheduling.run.ai/v2 +false +Queue$' \
    "${K[@]}" api-resources --api-group scheduling.run.ai --no-headers
  expect "the stand-in refuses no host field" 'pod/hostly created' sh -c \
    "printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: hostly, namespace: default}\nspec:\n  nodeName: node-1\n  hostNetwork: true\n  containers: [{name: c, image: busybox, securityContext: {privileged: true}}]\n' |
      kubectl --kubeconfig '$KCFG' apply -f -"
  expect_eq "the stand-in runs exec as a local process" hello "${K[@]}" exec hostly -- sh -c 'echo hello'
  stop_server
  start_server stihost --standin-exec || { fail "stand-in did not restart"; return; }
  expect_eq "the stand-in keeps its one Queue CRD across a restart" \
    customresourcedefinition.apiextensions.k8s.io/queues.scheduling.run.ai \
    kubectl --kubeconfig "$KCFG" get crd -o name
  stop_server
  KCFG=${saved[0]} SERVER_URL=${saved[1]} DATA_DIR=${saved[2]} SERVER_PID=${saved[3]}
}
