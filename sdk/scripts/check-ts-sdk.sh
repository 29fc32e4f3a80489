#!/usr/bin/env bash
# Builds and checks the TypeScript SDK's artefact as a user gets it: `npm pack`, the tarball's
# contents, an install into an empty project (zero dependencies), a strict consumer compile (Node
# types + NodeNext, and DOM-only + bundler resolution), and with --live the live tests
# (test/live/*.mjs, node --test) from that project against $E2E_GATEWAY_URL.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
pkg="$root/sdk/typescript"
live=false; [ "${1:-}" = --live ] && live=true
say() { echo "[sdk-ts] $*" >&2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

say "tsc -b sdk/typescript"
(cd "$root" && npx tsc -b sdk/typescript)
say "npm pack"
tarball="$work/$(cd "$pkg" && npm pack --silent --pack-destination "$work" | tail -n1)"
contents="$(tar -tzf "$tarball" | sort)"
if echo "$contents" | grep -Ev '^package/(package\.json|README\.md|CHANGELOG\.md|dist/[a-z-]+\.(js|d\.ts))$'; then
  say "unexpected files in the tarball (above)"; exit 1
fi
for f in package/dist/index.js package/dist/index.d.ts package/README.md package/CHANGELOG.md; do
  echo "$contents" | grep -qx "$f" || { say "missing in the tarball: $f"; exit 1; }
done
say "$(basename "$tarball"): $(echo "$contents" | wc -l) files, $(du -k "$tarball" | cut -f1) KiB"

say "install into an empty project"
consumer="$work/consumer"; mkdir -p "$consumer"
printf '{ "name": "consumer", "private": true, "type": "module" }\n' > "$consumer/package.json"
(cd "$consumer" && npm install --silent --no-audit --no-fund --offline "$tarball")
deps="$(cd "$consumer" && ls node_modules | grep -v '^@sandbox-platform$' | grep -v '^\.' || true)"
[ -z "$deps" ] || { say "the package pulled in dependencies: $deps"; exit 1; }
(cd "$consumer" && node -e "import('@sandbox-platform/client').then(m => { if (typeof m.SandboxClient !== 'function') process.exit(1); console.error('[sdk-ts] imports: ' + Object.keys(m).length + ' exports, version ' + m.VERSION) })")

say "strict consumer compile (Node, and DOM-only)"
cp "$pkg/test/consumer/consumer.ts" "$pkg/test/consumer/tsconfig.node.json" "$pkg/test/consumer/tsconfig.dom.json" "$consumer/"
mkdir -p "$consumer/node_modules/@types"
ln -s "$root/node_modules/@types/node" "$consumer/node_modules/@types/node"
tsc="$root/node_modules/typescript/bin/tsc"
(cd "$consumer" && node "$tsc" -p tsconfig.node.json && node "$tsc" -p tsconfig.dom.json)

if $live; then
  say "live tests against $E2E_GATEWAY_URL"
  cp "$pkg"/test/live/*.mjs "$consumer/"
  (cd "$consumer" && node --test ./*.live.test.mjs)
fi
say "ok"
