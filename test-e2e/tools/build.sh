#!/usr/bin/env bash
# Builds the pinned developer tools from their Go modules, or reuses a cached build: the cache key
# covers every input (the module's go.mod and go.sum, this script, build tags, the Go version and
# platform), so a second run with the same inputs compiles nothing, whatever the file timestamps.
#
#   build.sh <bin-dir> <tool>...     tools: helm kubeconform promtool
#
# Each tool is built into $TOOLS_CACHE/bin/<tool>-<key> (default <repo>/.cache/tools) and linked
# as <bin-dir>/<tool>. Progress goes to stderr. Network: the Go module proxy only.
#
#   helm, kubeconform  module test-e2e/tools           (go.mod `tool` directives)
#   promtool           module test-e2e/tools/promtool  (github.com/prometheus/prometheus; built
#                      with -tags remove_all_sd: rule checks need no service discovery plugins)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=/dev/null
. "$repo/test-e2e/tools/wait-build.sh"
cache="${TOOLS_CACHE:-$repo/.cache/tools}"

say() { echo "[tools] $*" >&2; }
fail() { echo "[tools] error: $*" >&2; exit 1; }

[ $# -ge 2 ] || fail "usage: build.sh <bin-dir> <tool>..."
bin_dir="$1"
shift
command -v go >/dev/null 2>&1 || fail "Go is not installed (or not on PATH): the tools are built from their Go modules"

# tool -> module dir, package, build tags
spec() {
  case "$1" in
    helm) echo "$here helm.sh/helm/v3/cmd/helm -" ;;
    kubeconform) echo "$here github.com/yannh/kubeconform/cmd/kubeconform -" ;;
    promtool) echo "$here/promtool github.com/prometheus/prometheus/cmd/promtool remove_all_sd" ;;
    *) fail "unknown tool $1 (known: helm kubeconform promtool)" ;;
  esac
}

mkdir -p "$cache/bin" "$bin_dir"
for tool in "$@"; do
  read -r dir pkg tags <<<"$(spec "$tool")"
  key="$( (cat "$dir/go.mod" "$dir/go.sum" "$0"; echo "$pkg $tags"; go env GOVERSION GOOS GOARCH) | sha256sum | cut -c1-16)"
  out="$cache/bin/$tool-$key"
  if [ -x "$out" ]; then
    say "$tool up to date (cache key $key)"
  else
    say "building $tool ($pkg $(cd "$dir" && go list -f '{{.Module.Version}}' "$pkg")); a first build downloads its modules and compiles for minutes"
    start=$(date +%s)
    tag_args=()
    [ "$tags" = "-" ] || tag_args=(-tags "$tags")
    (cd "$dir" && nice go build -trimpath -ldflags='-s -w' "${tag_args[@]}" -o "$out.tmp.$$" "$pkg") &
    build_pid=$!
    wait_build "$build_pid" "$tool" "$start" || { rm -f "$out.tmp.$$"; fail "go build of $tool failed (see above)"; }
    mv "$out.tmp.$$" "$out"
    say "built $tool in $(($(date +%s) - start)) s: $out"
  fi
  ln -sfn "$out" "$bin_dir/$tool"
done
