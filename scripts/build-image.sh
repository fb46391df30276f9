#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the kubicle image from the Containerfile and checks it runs:
# `kubicle version`, and `kubicle serve` answering /readyz as uid 65532.
#
#   scripts/build-image.sh [TAG]          (default localhost/kubicle:dev)
#
# Environment:
#   ENGINE=podman|docker   (default: podman if installed, else docker)
#   BASE=IMAGE             the Debian image of both stages (the Containerfile's
#                          DEBIAN; default debian:bookworm-slim)
#   BASE=debootstrap       without a registry: makes localhost/debian:bookworm
#                          with debootstrap from Debian's mirror (root; the
#                          Debian package debootstrap) and builds on it
#   STORAGE_DRIVER=vfs     podman's storage driver where overlay is unavailable
#   RUN=chroot             the run checks in the image's mounted root filesystem
#                          (chroot as uid 65532) instead of a container
#   ISOLATION=chroot       podman build's RUN steps without an OCI runtime (where
#                          crun/runc cannot make containers, e.g. inside a
#                          container with hybrid cgroups); the checks then run
#                          with --cgroups=disabled
# Not part of CI: it needs a container engine (and root, or rootless podman).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/kubicle:dev}
engine=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
eng=("$engine")
[ -n "${STORAGE_DRIVER:-}" ] && eng+=(--storage-driver "$STORAGE_DRIVER")
base=${BASE:-debian:bookworm-slim}

if [ "$base" = debootstrap ]; then
  base=localhost/debian:bookworm
  if ! "${eng[@]}" image exists "$base" 2>/dev/null; then
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    debootstrap --variant=minbase bookworm "$root" "${MIRROR:-http://deb.debian.org/debian}"
    tar -C "$root" -c . | "${eng[@]}" import - "$base"
  fi
fi

build=() run=()
if [ -n "${ISOLATION:-}" ]; then
  build+=(--isolation "$ISOLATION")
  run+=(--cgroups=disabled)
fi
"${eng[@]}" build ${build[@]+"${build[@]}"} --build-arg "DEBIAN=$base" -t "$tag" -f Containerfile .

# The checks: in a container, or (RUN=chroot, where the OCI runtime cannot
# start one: crun's setrlimit refused inside some sandboxes) in the image's
# own root filesystem, mounted, as uid 65532.
if [ "${RUN:-}" = chroot ]; then
  mnt=$("${eng[@]}" image mount "$tag")
  trap '"${eng[@]}" image unmount "$tag" >/dev/null 2>&1 || true' EXIT
  in_image() { chroot --userspec=65532:65532 "$mnt" /usr/bin/kubicle "$@"; }
  data=/tmp/check-$$
  install -d -o 65532 -g 65532 "$mnt$data"
  echo "== kubicle version"
  in_image version
  echo "== kubicle serve (uid 65532)"
  log=$(mktemp)
  in_image serve --data-dir "$data" --listen 127.0.0.1:0 >"$log" 2>&1 &
  pid=$!
  ok=
  for _ in $(seq 60); do
    if grep -q 'serving the Kubernetes API' "$log"; then ok=1; break; fi
    sleep 1
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  tail -3 "$log"; rm -f "$log"; rm -rf "${mnt:?}$data"
  [ -n "$ok" ] || { echo "kubicle serve did not start in the image" >&2; exit 1; }
  echo "== size: $("${eng[@]}" image inspect -f '{{.Size}}' "$tag") bytes"
  exit 0
fi

echo "== kubicle version"
"${eng[@]}" run ${run[@]+"${run[@]}"} --rm "$tag" version
echo "== kubicle serve (uid 65532, a private data dir)"
name=kubicle-image-check-$$
"${eng[@]}" run ${run[@]+"${run[@]}"} -d --name "$name" --tmpfs /data:uid=65532,gid=65532 "$tag" \
  serve --data-dir /data --listen 127.0.0.1:6443 >/dev/null
trap '"${eng[@]}" rm -f "$name" >/dev/null 2>&1 || true' EXIT
ok=
for _ in $(seq 60); do
  if "${eng[@]}" logs "$name" 2>&1 | grep -q 'serving the Kubernetes API'; then ok=1; break; fi
  sleep 1
done
"${eng[@]}" logs "$name" 2>&1 | tail -5
[ -n "$ok" ] || { echo "kubicle serve did not start in the image" >&2; exit 1; }
echo "== user: $("${eng[@]}" inspect -f '{{.Config.User}}' "$tag")"
echo "== size: $("${eng[@]}" image inspect -f '{{.Size}}' "$tag") bytes"
