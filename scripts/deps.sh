#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the Debian
# packages in scripts/apt-packages.txt and the Go modules. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -v '^\s*#' scripts/apt-packages.txt | awk 'NF {print $1}')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
go mod download
