#!/usr/bin/env bash
# Installs what building and testing skillrun needs on a Debian or Ubuntu
# host. The Vagrantfile provisions with it and .ci/run runs it, so CI
# proves the provisioning. Safe to run again: it installs only what is
# missing.
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists libseccomp 2>/dev/null || need+=(libseccomp-dev)
command -v git >/dev/null 2>&1 || need+=(git)
# The bundled example skill and the integration tests' skills are Python.
[ -x /usr/bin/python3 ] || need+=(python3)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "provision: missing ${need[*]}; run as root: sudo $0" >&2
    exit 1
  fi
  echo "provision: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# Go: the module needs go >= 1.26 (go-landlock). Use the one on PATH or in
# /usr/local/go; fetch the official tarball only where that is reachable.
go_bin=$(command -v go || echo /usr/local/go/bin/go)
if ! "$go_bin" version >/dev/null 2>&1; then
  ver=${GO_VERSION:-1.26.8}
  echo "provision: installing Go $ver into /usr/local/go" >&2
  arch=$(dpkg --print-architecture)
  curl -fsSL "https://go.dev/dl/go${ver}.linux-${arch}.tar.gz" | tar -C /usr/local -xz
  go_bin=/usr/local/go/bin/go
fi
echo "provision: $("$go_bin" version), $(pkg-config --modversion libseccomp 2>/dev/null | sed 's/^/libseccomp /')" >&2
