#!/usr/bin/env bash
# Generates api-gateway/src/e2b/gen/ (TypeScript of the envd services) from the .proto files here
# with buf and protoc-gen-es from node_modules (pinned in api-gateway/package.json), then formats
# it with the repository's prettier. `--check` generates into a temporary directory and fails when
# the committed gen/ differs (make e2b-verify).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
export PATH="$root/node_modules/.bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/proto"
cp -r "$here/buf.yaml" "$here/buf.gen.yaml" "$here/process" "$here/filesystem" "$work/proto/"
(cd "$work/proto" && buf generate)
# The lint of the repository checks generated code like any other (it passes): no blanket disable.
find "$work/gen" -name '*.ts' -exec sed -i '/^\/\* eslint-disable \*\/$/d' {} +
prettier --config "$root/.prettierrc.json" --write "$work/gen" >/dev/null
if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$work/gen" "$here/../gen"; then
    echo "api-gateway/src/e2b/gen is out of date: run make e2b-generate" >&2
    exit 1
  fi
  echo "api-gateway/src/e2b/gen is up to date"
else
  rm -rf "$here/../gen"
  cp -r "$work/gen" "$here/../gen"
  echo "generated api-gateway/src/e2b/gen"
fi
