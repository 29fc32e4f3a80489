#!/usr/bin/env bash
# Builds and checks the TypeScript SDK's artefact as a user gets it: `npm pack`, the tarball's
# contents (LICENSE included), an install into an empty project (zero dependencies), `import` from
# an ES module and `require()` from a CommonJS file (the same exports and version from both), a
# strict consumer compile (Node types + NodeNext, DOM-only + bundler resolution, and a CommonJS
# .cts file whose require is typed by the package's .d.cts declarations), and with --live the live
# tests (test/live/*.mjs, node --test) from that project against $E2E_GATEWAY_URL.
#   SDK_PACK_DEST      also keep the tarball in this directory (make release)
#   SDK_REUSE_CHECKED  1: when this tree's tarball already passed (checked-cache.sh), copy it
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
pkg="$root/sdk/typescript"
live=false; [ "${1:-}" = --live ] && live=true
say() { echo "[sdk-ts] $*" >&2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
. "$root/sdk/scripts/checked-cache.sh"
if ! $live && reuse_checked ts-sdk "${SDK_PACK_DEST:-}"; then exit 0; fi

say "tsc -b sdk/typescript, then the CommonJS bundle and its .d.cts declarations"
(cd "$root" && npx tsc -b sdk/typescript && node sdk/typescript/scripts/cjs.mjs >/dev/null)
say "npm pack"
tarball="$work/$(cd "$pkg" && npm pack --silent --pack-destination "$work" | tail -n1)"
contents="$(tar -tzf "$tarball" | sort)"
if echo "$contents" | grep -Ev '^package/(package\.json|README\.md|CHANGELOG\.md|LICENSE|dist/[a-z-]+\.(js|d\.ts|d\.cts)|dist/index\.cjs)$'; then
  say "unexpected files in the tarball (above)"; exit 1
fi
for f in package/dist/index.js package/dist/index.d.ts package/dist/index.cjs package/dist/index.d.cts \
  package/README.md package/CHANGELOG.md package/LICENSE; do
  echo "$contents" | grep -qx "$f" || { say "missing in the tarball: $f"; exit 1; }
done
say "$(basename "$tarball"): $(echo "$contents" | wc -l) files, $(du -k "$tarball" | cut -f1) KiB"
if [ -n "${SDK_PACK_DEST:-}" ]; then mkdir -p "$SDK_PACK_DEST" && cp "$tarball" "$SDK_PACK_DEST/"; fi

say "install into an empty project"
consumer="$work/consumer"; mkdir -p "$consumer"
printf '{ "name": "consumer", "private": true, "type": "module" }\n' > "$consumer/package.json"
(cd "$consumer" && npm install --silent --no-audit --no-fund --offline "$tarball")
deps="$(cd "$consumer" && ls node_modules | grep -v '^@sandbox-platform$' | grep -v '^\.' || true)"
[ -z "$deps" ] || { say "the package pulled in dependencies: $deps"; exit 1; }
cat >"$consumer/use-import.mjs" <<'JS'
import * as m from '@sandbox-platform/client';
if (typeof m.SandboxClient !== 'function' || typeof m.NotFoundError !== 'function') throw new Error('import: exports missing');
console.log(JSON.stringify({ keys: Object.keys(m).sort(), version: m.VERSION }));
JS
cat >"$consumer/use-require.cjs" <<'JS'
const m = require('@sandbox-platform/client');
if (typeof m.SandboxClient !== 'function' || typeof m.NotFoundError !== 'function') throw new Error('require: exports missing');
if (!require.resolve('@sandbox-platform/client').endsWith('.cjs')) throw new Error('require resolved to ' + require.resolve('@sandbox-platform/client'));
console.log(JSON.stringify({ keys: Object.keys(m).filter((k) => k !== '__esModule').sort(), version: m.VERSION }));
JS
imported="$(cd "$consumer" && node use-import.mjs)"
required="$(cd "$consumer" && node use-require.cjs)"
[ "$imported" = "$required" ] || { say "import and require() disagree:"; echo "import:  $imported" >&2; echo "require: $required" >&2; exit 1; }
say "import and require(): the same $(node -e 'console.log(JSON.parse(process.argv[1]).keys.length)' "$imported") exports, version $(node -e 'console.log(JSON.parse(process.argv[1]).version)' "$imported")"

say "strict consumer compile (Node, and DOM-only)"
cp "$pkg/test/consumer/consumer.ts" "$pkg/test/consumer/tsconfig.node.json" "$pkg/test/consumer/tsconfig.dom.json" "$consumer/"
mkdir -p "$consumer/node_modules/@types"
ln -s "$root/node_modules/@types/node" "$consumer/node_modules/@types/node"
tsc="$root/node_modules/typescript/bin/tsc"
(cd "$consumer" && node "$tsc" -p tsconfig.node.json && node "$tsc" -p tsconfig.dom.json)
say "strict consumer compile of a CommonJS file (.cts, NodeNext: require is typed by index.d.cts)"
cat >"$consumer/consumer-require.cts" <<'TS'
import client = require('@sandbox-platform/client');
function make(baseUrl: string, apiKey: string): client.SandboxClient {
  return new client.SandboxClient({ baseUrl, apiKey });
}
function isMissing(e: unknown): e is client.NotFoundError {
  return e instanceof client.NotFoundError;
}
const version: string = client.VERSION;
const result: client.ExecResult | undefined = undefined;
export = { make, isMissing, version, result };
TS
node -e '
const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
c.files = ["consumer-require.cts"];
require("fs").writeFileSync(process.argv[2], JSON.stringify(c));
' "$consumer/tsconfig.node.json" "$consumer/tsconfig.require.json"
(cd "$consumer" && node "$tsc" -p tsconfig.require.json)

if $live; then
  say "live tests against $E2E_GATEWAY_URL"
  cp "$pkg"/test/live/*.mjs "$consumer/"
  (cd "$consumer" && node --test ./*.live.test.mjs)
fi
keep_checked ts-sdk "$tarball"
say "ok"
