#!/usr/bin/env bash
# Installs, with apt-get, what building and testing the local images needs and the host lacks:
# a static C toolchain (pause, netecho), containerd's ctr plus runc and umoci (import and the
# runtime tests), the Debian packages whose files the recipes copy into the images, and Chromium
# for the console's browser e2e.
# containerd is installed for its binaries only: this never starts or enables the system service
# (the cluster runs its own containerd with its own socket, and the tests start private ones).
set -euo pipefail

# Keep in sync with the "packages" entries of test-e2e/images/recipes/layers/*.json.
recipe_packages=(
  bash dash coreutils grep sed mawk findutils procps ca-certificates
  tar gzip bzip2 xz-utils unzip diffutils patch less jq curl git
  python3-minimal python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
)
tool_packages=(gcc libc6-dev containerd runc umoci util-linux)
# The web console's e2e (test-e2e/specs/console) drives Debian's Chromium headless with
# playwright-core; fonts-liberation gives its screenshots real glyphs (a Recommends of chromium,
# which --no-install-recommends leaves out).
browser_packages=(chromium fonts-liberation)

missing=()
for p in "${recipe_packages[@]}" "${tool_packages[@]}" "${browser_packages[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "host-deps: installing ${missing[*]}"
  [[ $(id -u) == 0 ]] || { echo "host-deps: need root to apt-get install ${missing[*]}" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  if [[ " ${missing[*]} " == *" containerd "* && ! -e /usr/sbin/policy-rc.d ]]; then
    # policy-rc.d exit 101 = "action forbidden": the postinst must not start the system daemon.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  # Another engineer's apt-get may hold the dpkg lock: wait for it instead of failing.
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
  # The package enables containerd.service on systemd hosts; undo that (nothing was started
  # where systemd is not running, and on systemd hosts the system daemon must stay off).
  if [[ " ${missing[*]} " == *" containerd "* ]]; then
    rm -f /etc/systemd/system/multi-user.target.wants/containerd.service
  fi
fi

# node comes from the host, not from Debian (bookworm ships node 18; the repo needs >= 20.19).
if [[ ! -x /usr/bin/node ]]; then
  echo "host-deps: /usr/bin/node is missing; install Node.js 20 (nodesource nodejs package) first" >&2
  exit 1
fi
