#!/usr/bin/env bash
# Build the localkube binary, or reuse a cached one. The cache key covers every input of the
# build (go.mod, go.sum, *.go, the Go version and platform), so unchanged sources cost no compile.
# Prints the path of the binary (test-e2e/localkube/bin/localkube, a symlink into the cache) on
# stdout; progress goes to stderr.
#
#   LOCALKUBE_CACHE       cache dir for built binaries (default: <repo>/.cache/localkube)
#   LOCALKUBE_MIN_FREE_GB free disk needed for a first build (default 6: module cache ~0.9 GB,
#                         Go build cache ~3 GB, binary ~0.1 GB)
#   LOCALKUBE_BUILD_P     go build -p (default 2; use 1 on machines with < 4 GB RAM)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=/dev/null
. "$repo/test-e2e/tools/wait-build.sh"
cache="${LOCALKUBE_CACHE:-$repo/.cache/localkube}"
min_go_minor=25

say() { echo "[localkube build] $*" >&2; }
fail() { echo "[localkube build] error: $*" >&2; exit 1; }

if ! command -v go >/dev/null 2>&1; then
  fail "Go is not installed (or not on PATH); localkube is compiled from the Kubernetes Go modules. Install Go 1.${min_go_minor} or newer (https://go.dev/doc/install) and run again."
fi
go_minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [ -z "$go_minor" ] || [ "$go_minor" -lt "$min_go_minor" ]; then
  fail "$(go env GOVERSION) is too old: Kubernetes 1.35 needs Go 1.${min_go_minor} or newer (https://go.dev/doc/install)."
fi

key="$( (cd "$here" && cat go.mod go.sum ./*.go build.sh; go env GOVERSION GOOS GOARCH) | sha256sum | cut -c1-16)"
bin="$cache/bin/localkube-$key"
if [ -x "$bin" ]; then
  say "up to date (cache key $key)"
else
  mkdir -p "$cache/bin"
  need_gb="${LOCALKUBE_MIN_FREE_GB:-6}"
  for d in "$cache" "$(go env GOCACHE)" "$(go env GOMODCACHE)"; do
    mkdir -p "$d"
    free_gb="$(df -Pk "$d" | awk 'NR==2 {print int($4 / 1024 / 1024)}')"
    if [ "$free_gb" -lt "$need_gb" ]; then
      fail "only ${free_gb} GB free on the file system of $d; building localkube needs about ${need_gb} GB (Go module and build caches). Free some disk space (e.g. \`go clean -cache\`) and run again."
    fi
  done
  k8s_version="$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
  if ! (cd "$here" && go list -m all >/dev/null 2>&1); then
    say "downloading Go modules (first time: ~0.9 GB)..."
    (cd "$here" && go mod download -x 2>&1 | grep --line-buffered -o 'https://[^ ]*\.zip$' | sed -u 's|.*/\([^/]*/@v/[^/]*\)$|  fetched \1|' >&2) || true
    (cd "$here" && go mod download) || fail "go mod download failed (see above); the Go module proxy must be reachable."
  fi
  say "compiling Kubernetes ${k8s_version} components into one binary (cold: ~5 min and ~2.2 GB RAM on 2 cores; warm cache: ~1 min)..."
  ldflags="-s -w"
  for kv in "gitVersion=${k8s_version}" "gitMajor=$(echo "$k8s_version" | sed 's/^v\([0-9]*\)\..*/\1/')" \
    "gitMinor=$(echo "$k8s_version" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')" "gitTreeState=clean" \
    "buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; do
    ldflags="$ldflags -X k8s.io/component-base/version.$kv -X k8s.io/client-go/pkg/version.$kv"
  done
  start=$(date +%s)
  # A per-process temp name: two builds of the same key (parallel integration suites) must not
  # move each other's output away.
  tmp="$bin.tmp.$$"
  (cd "$here" && nice go build -p "${LOCALKUBE_BUILD_P:-2}" -trimpath -ldflags "$ldflags" -o "$tmp" .) &
  build_pid=$!
  wait_build "$build_pid" "" "$start" || { rm -f "$tmp"; fail "go build failed (see above)"; }
  mv "$tmp" "$bin"
  say "built in $(( $(date +%s) - start )) s: $bin ($(du -m "$bin" | cut -f1) MB)"
fi
mkdir -p "$here/bin"
ln -sfn "$bin" "$here/bin/localkube"
echo "$here/bin/localkube"
