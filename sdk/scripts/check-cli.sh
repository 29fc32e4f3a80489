#!/usr/bin/env bash
# Builds and checks the CLI's artefact: the one-file bundle (dist/sbx.cjs, shebang, executable),
# `sbx version` from a directory without node_modules, `kubectl plugin list` finding it installed
# as kubectl-sandbox on PATH (with no cluster), and with --live the CLI e2e tests
# (test/e2e/*.mjs, node --test) against $E2E_GATEWAY_URL.
#   LOCALKUBE_BIN  the localkube binary whose `kubectl` subcommand is the kubectl (make localkube)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cli="$root/sdk/cli"
live=false; [ "${1:-}" = --live ] && live=true
say() { echo "[sdk-cli] $*" >&2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

say "bundle"
bundle="$(node "$cli/scripts/bundle.mjs")"
head -n1 "$bundle" | grep -qx '#!/usr/bin/env node' || { say "no shebang in $bundle"; exit 1; }
[ -x "$bundle" ] || { say "$bundle is not executable"; exit 1; }

mkdir -p "$work/bin"
cp "$bundle" "$work/bin/kubectl-sandbox"
ln -s "$work/bin/kubectl-sandbox" "$work/bin/sbx"
version="$(cd "$work" && PATH="$work/bin:$PATH" sbx version)"
say "$version, $(du -k "$bundle" | cut -f1) KiB, runs without node_modules"

kubectl=("$LOCALKUBE_BIN" kubectl)
plugins="$(cd "$work" && PATH="$work/bin:$PATH" KUBECONFIG="$work/none" "${kubectl[@]}" plugin list 2>&1)"
echo "$plugins" | grep -q "$work/bin/kubectl-sandbox" || { say "kubectl plugin list did not find kubectl-sandbox:"; echo "$plugins" >&2; exit 1; }
[ "$(cd "$work" && PATH="$work/bin:$PATH" KUBECONFIG="$work/none" "${kubectl[@]}" sandbox version)" = "$version" ] \
  || { say "kubectl sandbox version failed"; exit 1; }
say "kubectl plugin list: kubectl-sandbox found; kubectl sandbox version: ok"

if $live; then
  say "CLI e2e against $E2E_GATEWAY_URL"
  SBX="$bundle" KUBECTL="$LOCALKUBE_BIN kubectl" node --test "$cli"/test/e2e/*.test.mjs
fi
say "ok"
