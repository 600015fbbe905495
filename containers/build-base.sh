#!/usr/bin/env bash
# Build the local base image (Debian bookworm minbase + python3, venv, git, CA certificates)
# without any container registry: mmdebstrap streams a root fs tarball into `docker import`.
# debootstrap is the fallback (slower, needs root). Usage: build-base.sh TAG
#
# The mirror is Debian's default one, as in the host's apt sources; override it with
# OPENENV_GYM_DEBIAN_MIRROR. The suite can be overridden with OPENENV_GYM_DEBIAN_SUITE.
set -euo pipefail
tag=${1:?usage: build-base.sh TAG}
suite=${OPENENV_GYM_DEBIAN_SUITE:-bookworm}
mirror=${OPENENV_GYM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=python3,python3-venv,git,ca-certificates
env_path='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

if command -v mmdebstrap >/dev/null 2>&1; then
  echo "building $tag with mmdebstrap ($suite from $mirror)" >&2
  mmdebstrap --quiet --variant=minbase --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/{doc,man,locale}/*' \
    "$suite" - "$mirror" | docker import -c "$env_path" - "$tag"
elif command -v debootstrap >/dev/null 2>&1; then
  echo "building $tag with debootstrap ($suite from $mirror; mmdebstrap is faster)" >&2
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | docker import -c "$env_path" - "$tag"
else
  echo "neither mmdebstrap nor debootstrap is installed: apt-get install mmdebstrap" >&2
  exit 1
fi
