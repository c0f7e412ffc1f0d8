#!/usr/bin/env bash
# Make a local Debian bookworm image with Python 3.11 for machines that cannot
# reach a container registry (our CI, this dev box). Idempotent: does nothing
# when the image already exists.
#
#   scripts/make-base-image.sh [IMAGE]      (default repromatrix-local/bookworm-python:3.11)
#
# Map the public base name onto it with the mirror map, e.g.
#   repromatrix run --base-image python:3.11-slim=repromatrix-local/bookworm-python:3.11
# Needs: a running docker daemon, debootstrap, root, network access to a Debian mirror
# (DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail

image="${1:-repromatrix-local/bookworm-python:3.11}"
suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$image" >/dev/null 2>&1; then
    echo "make-base-image: $image exists"
    exit 0
fi

# Serialise concurrent callers (CI job + test fixture) on one lock file.
lock="${TMPDIR:-/tmp}/repromatrix-make-base-image.lock"
exec 9>"$lock"
flock 9
if docker image inspect "$image" >/dev/null 2>&1; then
    echo "make-base-image: $image exists"
    exit 0
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/repromatrix-rootfs.XXXXXX")"
trap 'rm -rf "$root"' EXIT
echo "make-base-image: debootstrap $suite into $root"
debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates \
    "$suite" "$root" "$mirror"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
echo "make-base-image: importing as $image"
tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$image"
echo "make-base-image: done $image"
