#!/usr/bin/env bash
# Build the e2e OTLP receiver (main.go: the OpenTelemetry Collector's otlpreceiver writing spans to
# a file) or reuse the cached binary; prints the directory holding `otel-receiver`. Cached like the
# node add-ons (../build.sh) by a sha256 of its inputs (go.mod, go.sum, main.go, this script, Go
# version and platform), in its own script so that adding it did not change the other add-ons' keys.
#   LOCALKUBE_CACHE   cache dir (default: <repo>/.cache/localkube; binary in addons/otel-receiver-<key>/)
#   LOCALKUBE_BUILD_P go build -p (default 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
# shellcheck source=/dev/null
. "$repo/test-e2e/tools/wait-build.sh"
cache="${LOCALKUBE_CACHE:-$repo/.cache/localkube}/addons"
say() { echo "[otel-receiver] $*" >&2; }
command -v go >/dev/null 2>&1 || { say "error: Go is not installed (or not on PATH); install Go 1.26 or newer"; exit 1; }

key="$( (cd "$here" && cat go.mod go.sum main.go build.sh; go env GOVERSION GOOS GOARCH) | sha256sum | cut -c1-16)"
out="$cache/otel-receiver-$key"
if [ -f "$out/.complete" ]; then
  say "up to date (cache key $key)"
else
  tmp="$out.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  say "building from go.opentelemetry.io/collector/receiver/otlpreceiver (first time: about 1 min of CPU on 2 cores plus downloads)..."
  start=$(date +%s)
  (cd "$here" && CGO_ENABLED=0 nice go build -p "${LOCALKUBE_BUILD_P:-2}" -trimpath -ldflags "-s -w" -o "$tmp/otel-receiver" .) &
  pid=$!
  wait_build "$pid" "" "$start" || { say "error: go build failed (see above)"; exit 1; }
  touch "$tmp/.complete"
  if [ -f "$out/.complete" ]; then rm -rf "$tmp"; else rm -rf "$out" && mv "$tmp" "$out"; fi
  say "built in $(($(date +%s) - start)) s: $out"
fi
echo "$out"
