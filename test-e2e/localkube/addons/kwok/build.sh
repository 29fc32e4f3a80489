#!/usr/bin/env bash
# Build KWOK's controller (sigs.k8s.io/kwok/cmd/kwok, the simulated nodes of `make bench-scale`)
# or reuse the cached binary; prints the directory holding `kwok`. Cached like the node add-ons
# (../build.sh) by a sha256 of its inputs (go.mod, go.sum, tools.go, this script, Go version and
# platform), in its own script so that adding it did not change the other add-ons' cache keys.
# Opt-in: only `make cluster-up LOCALKUBE_KWOK_NODES=N` (N > 0) and `make bench-scale` build it.
#   LOCALKUBE_CACHE   cache dir (default: <repo>/.cache/localkube; binary in addons/kwok-<key>/)
#   LOCALKUBE_BUILD_P go build -p (default 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
# shellcheck source=/dev/null
. "$repo/test-e2e/tools/wait-build.sh"
cache="${LOCALKUBE_CACHE:-$repo/.cache/localkube}/addons"
say() { echo "[kwok] $*" >&2; }
command -v go >/dev/null 2>&1 || { say "error: Go is not installed (or not on PATH); install Go 1.26 or newer"; exit 1; }

key="$( (cd "$here" && cat go.mod go.sum tools.go build.sh; go env GOVERSION GOOS GOARCH) | sha256sum | cut -c1-16)"
out="$cache/kwok-$key"
if [ -f "$out/.complete" ]; then
  say "up to date (cache key $key)"
else
  tmp="$out.tmp.$$" # per process: parallel builds of the same key must not clobber each other
  rm -rf "$tmp" && mkdir -p "$tmp"
  say "building from sigs.k8s.io/kwok v0.8.0 (first time: a few minutes of CPU on 2 cores plus downloads)..."
  start=$(date +%s)
  (cd "$here" && CGO_ENABLED=0 nice go build -p "${LOCALKUBE_BUILD_P:-2}" -trimpath -ldflags "-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok) &
  pid=$!
  wait_build "$pid" "" "$start" || { say "error: go build failed (see above)"; exit 1; }
  # KWOK's own "fast" stages of this version (kwokctl's defaults): Nodes become Ready and renew a
  # Lease; Pods become Running and Ready at once with an IP of their node's podCIDR (Job Pods
  # complete); a deleted Pod is removed at once. localkube passes this file as --config.
  mod="$(cd "$here" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    printf -- '---\n'; cat "$mod/kustomize/stage/$f"
  done >"$tmp/stages.yaml"
  touch "$tmp/.complete"
  if [ -f "$out/.complete" ]; then rm -rf "$tmp"; else rm -rf "$out" && mv "$tmp" "$out"; fi
  say "built in $(($(date +%s) - start)) s: $out"
fi
echo "$out"
