#!/usr/bin/env bash
# Build the node add-ons of localkube from their Go modules, or reuse cached binaries:
#   kube-router  NetworkPolicy enforcer (github.com/cloudnativelabs/kube-router/v2, policy controller only)
#   coredns      cluster DNS (github.com/coredns/coredns, with only the plugins localkube uses: main.go)
#   gvisor       runsc, gVisor's OCI runtime (gvisor.dev/gvisor), run by containerd's runc v2 shim
#   local-path-provisioner  rancher's dynamic provisioner (github.com/rancher/local-path-provisioner), kind's
#   versitygw    Versity's S3 gateway (github.com/versity/versitygw, Apache-2.0): the snapshot object store (s3.go)
# Each add-on is its own Go module under addons/<name>/ (its dependencies cannot share localkube's
# go.mod: kube-router pins client-go 0.29, localkube 0.35). The cache key is a sha256 of every input
# (go.mod, go.sum, Go files, this script, Go version and platform), so an unchanged tree costs no
# compile and a changed one recompiles only what Go's build cache does not already hold.
#
#   usage: build.sh NAME...     prints, per NAME, the directory holding its binaries
#   LOCALKUBE_CACHE   cache dir (default: <repo>/.cache/localkube; binaries in addons/<name>-<key>/)
#   LOCALKUBE_BUILD_P go build -p (default 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck source=/dev/null
. "$repo/test-e2e/tools/wait-build.sh"
cache="${LOCALKUBE_CACHE:-$repo/.cache/localkube}/addons"

say() { echo "[localkube addons] $*" >&2; }
fail() { echo "[localkube addons] error: $*" >&2; exit 1; }

# outputs NAME: "binary package" pairs, one per line.
outputs() {
  case "$1" in
    kube-router) echo "kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router" ;;
    coredns) echo "coredns ." ;;
    gvisor) echo "runsc gvisor.dev/gvisor/runsc" ;;
    local-path-provisioner) echo "local-path-provisioner github.com/rancher/local-path-provisioner" ;;
    versitygw) echo "versitygw github.com/versity/versitygw/cmd/versitygw" ;;
    *) fail "unknown add-on '$1' (known: kube-router coredns gvisor local-path-provisioner versitygw)" ;;
  esac
}

command -v go >/dev/null 2>&1 || fail "Go is not installed (or not on PATH); the node add-ons are compiled from Go modules. Install Go 1.26 or newer (https://go.dev/doc/install)."
[ $# -gt 0 ] || fail "usage: build.sh NAME... (kube-router coredns gvisor local-path-provisioner versitygw)"

for name in "$@"; do
  dir="$here/$name"
  list="$(outputs "$name")"
  [ -f "$dir/go.mod" ] || fail "$dir/go.mod is missing"
  need="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$dir/go.mod")"
  have="$(go env GOVERSION | sed 's/^go//')"
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    fail "$name needs Go $need or newer (its go.mod), this is go$have (https://go.dev/doc/install)"
  fi
  key="$( (cd "$dir" && cat go.mod go.sum ./*.go "$here/build.sh"; go env GOVERSION GOOS GOARCH) | sha256sum | cut -c1-16)"
  out="$cache/$name-$key"
  if [ -f "$out/.complete" ]; then
    say "$name up to date (cache key $key)"
  else
    tmp="$out.tmp.$$" # per process: parallel builds of the same key must not clobber each other
    rm -rf "$tmp" && mkdir -p "$tmp"
    say "building $name from $(sed -n 's/^require \([^ (]*\) \(v[^ ]*\)$/\1 \2/p' "$dir/go.mod" | head -1) (first time: 4-7 min of CPU on 2 cores; warm Go cache: seconds)..."
    start=$(date +%s)
    while read -r bin pkg; do
      (cd "$dir" && CGO_ENABLED=0 nice go build -p "${LOCALKUBE_BUILD_P:-2}" -trimpath -ldflags "-s -w" -o "$tmp/$bin" "$pkg") &
      pid=$!
      wait_build "$pid" "$bin" "$start" || fail "go build of $bin ($pkg) failed (see above)"
    done <<<"$list"
    touch "$tmp/.complete"
    if [ -f "$out/.complete" ]; then rm -rf "$tmp"; else rm -rf "$out" && mv "$tmp" "$out"; fi
    say "built $name in $(($(date +%s) - start)) s: $out"
  fi
  echo "$out"
done
