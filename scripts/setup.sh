#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs Kubicle's build and test dependencies from Debian's packages.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libuv1-dev libssl-dev libjansson-dev
      libsqlite3-dev check libyaml-dev node-llhttp uuid-dev liburing-dev openssl sqlite3 python3 curl
      nginx-light wrk libcurl4-openssl-dev clang clang-format libclang-rt-14-dev
      libldns-dev libpcre2-dev bind9-dnsutils dnsperf dnsmasq-base zlib1g-dev
      python3-kubernetes)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
