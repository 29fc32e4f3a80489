#!/usr/bin/env bash
# `make node-deps`: npm ci, or the node_modules trees an earlier npm ci made from the same inputs,
# restored from the machine's cache ($PLATFORM_CACHE/node-modules, keyed by a hash of
# package-lock.json, every package.json in the repository, and the node and npm versions). npm ci
# here runs no install script (npm's allowScripts), so its result is the lock file's packages
# and nothing else: a tree restored for the same key is the tree npm ci would write, in a few
# seconds instead of about 50. Any change to the inputs runs npm ci (which also checks that the
# package.json files and the lock agree) and caches its result. An archive is written to a
# temporary name and renamed, so clones running at once do not clobber each other.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cache="${PLATFORM_CACHE:-$root/.cache}/node-modules"
key="$( (cat package-lock.json; git ls-files -z '*package.json' | sort -z | xargs -0 cat; node --version; npm --version) \
  | sha256sum | cut -c1-16)"
archive="$cache/$key.tar.zst"
# The trees npm ci writes: the root one and the workspaces' own (nested versions).
trees() { find . -maxdepth 3 -name node_modules -type d -not -path './node_modules/*' -not -path './.*' | sort; }

if [ -f "$archive" ] && command -v zstd >/dev/null; then
  trees | xargs -r rm -rf
  zstd -dcq "$archive" | tar -xf -
  touch "$archive"
  echo "[node-deps] node_modules restored from $archive (npm ci of the same inputs)"
  exit 0
fi
npm ci --no-audit --no-fund
if command -v zstd >/dev/null; then
  mkdir -p "$cache"
  tmp="$archive.tmp.$$"
  # Archives no clone restored for a week go (the lock files they were made from are gone).
  mapfile -t dirs < <(trees)
  if tar -cf - "${dirs[@]}" | zstd -1 -T0 -q -o "$tmp" && mv "$tmp" "$archive"; then
    find "$cache" -name '*.tar.zst' -mtime +7 -delete
    echo "[node-deps] cached node_modules as $archive ($(du -h "$archive" | cut -f1))"
  else
    rm -f "$tmp"
    echo "[node-deps] warning: could not cache node_modules in $cache (npm ci itself passed)" >&2
  fi
fi
