# SPDX-License-Identifier: Apache-2.0
# Client libraries other than kubectl against a tenant: the official Python
# client (Debian's python3-kubernetes, tests/e2e/pyclient.py), which sends
# what client-go does not (watch=True, its own patch content types) and
# reads discovery through its dynamic client. Runs against the "main" server.

CL_HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")

clients_suite_python() {
  local py=/usr/bin/python3 out f=$E2E_TMP/pyclient.out
  if ! "$py" -c 'import kubernetes' 2>/dev/null; then
    fail "python client: python3-kubernetes is not installed for $py (scripts/setup.sh installs it)"
    return
  fi
  "$py" "$CL_HERE/pyclient.py" "$E2E_TMP/main/kubeconfig" pyclient >"$f" 2>&1
  cl_line() { grep -m1 "^$1 " "$f" | cut -d' ' -f2-; }
  expect_eq "python client: /version" "v1.33.0" cl_line version
  expect_eq "python client: create" "a True" cl_line created
  expect_eq "python client: AlreadyExists is a 409 Status it reads" "409 AlreadyExists" cl_line duplicate
  expect_eq "python client: list by label" "['a']" cl_line labelSelector
  expect_eq "python client: list by field" "['c2']" cl_line fieldSelector
  expect_eq "python client: pages of 2 with continue tokens" "[2, 2, 1]" cl_line pages
  expect_eq "python client: patch (its content type) merges" '{"k": "v", "k2": "v2"}' cl_line patch
  expect_eq "python client: a watch it opens with watch=True, from a resourceVersion" \
    "['ADDED:b', 'MODIFIED:b', 'DELETED:b']" cl_line watch
  expect_eq "python client: the dynamic client's discovery and list" \
    "configmaps True ['a', 'c1', 'c2', 'c3', 'kube-root-ca.crt']" cl_line dynamic
  expect_eq "python client: the dynamic client sees the scale subresource" \
    "deployments True True" cl_line dynamic-deployments
  expect_eq "python client: read the scale subresource" "1" cl_line scale
  expect_eq "python client: patch the scale subresource" "3" cl_line scaled
  expect_eq "python client: NotFound" "404 NotFound" cl_line missing
  expect_eq "python client: Invalid" "422 Invalid" cl_line invalid
  expect_eq "python client: a stale replace is a Conflict" "409 Conflict" cl_line stale
  expect_eq "python client: delete with a Foreground body" "True" cl_line foreground-delete
  if grep -q Traceback "$f"; then fail "python client: the script failed: $(tail -5 "$f")"; fi
  unset -f cl_line
}
