#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the Debian
# packages in scripts/apt-packages.txt and the Go modules. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -v '^\s*#' scripts/apt-packages.txt | awk 'NF {print $1}')
. scripts/lib/packages.sh
ensure_packages deps "${pkgs[@]}"
go mod download
