#!/usr/bin/env bash
# make release: the artefacts of the one version (root package.json "version") in dist/ (wiped
# first), each built from this tree and checked, then SHA256SUMS over all of them:
#   charts/sandbox-platform-V.tgz      the chart, version = appVersion = V, image tags = V
#   images/NAME-V.oci.tar              sandbox-agent, operator, api-gateway as oci-archives named
#                                      localhost/sandbox-platform/NAME:V (checked: plain `ctr images
#                                      import` into a private containerd, then node runs in each)
#   sbom/NAME-V.spdx.json              SPDX 2.3 of each image (validated with spdx-tools)
#   npm/*.tgz                          @sandbox-platform/client and @sandbox-platform/cli (npm pack)
#   python/*.whl, *.tar.gz             sandbox-platform wheel and sdist
#   krew/sbx-V.tar.gz, sandbox.yaml    the kubectl plugin archive and its manifest with the real sha256
#   openapi-V.json                     the gateway's OpenAPI document
# Each SDK artefact goes through its check (sdk/scripts/check-*.sh): the npm tarball installed into
# an empty project with import and require, the wheel into a clean venv, the CLI bundle as a
# kubectl plugin. A tarball or wheel that already passed its check for this tree's inputs (the
# e2e tier's live SDK checks run just before; sdk/scripts/checked-cache.sh) is copied, not rebuilt.
#   IMAGES_DIR     where `make images` wrote NAME.tar (default $LOCALKUBE_DIR/images)
#   HELM           the pinned helm (make tools)
#   RELEASE_VENV   a venv with spdx-tools (release/requirements.txt); unset: SBOMs are not validated
#   DIST_DIR       output directory (default dist/)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "[release] $*" >&2; }
die() { say "error: $*"; exit 1; }
version="$(node -p 'require("./package.json").version')"
dist="${DIST_DIR:-$root/dist}"
images_dir="${IMAGES_DIR:-${LOCALKUBE_DIR:-$root/.localkube}/images}"
helm="${HELM:?HELM (the pinned helm: make tools) is required}"
repo=localhost/sandbox-platform
# image -> the workspace whose production dependencies it bundles
declare -A workspace=([sandbox-agent]=sandbox-agent [operator]=operator [api-gateway]=api-gateway [egress-proxy]=egress-proxy)
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

say "version $version"
grep -qx "## $version" CHANGELOG.md || die "CHANGELOG.md has no '## $version' section"
node release/version.mjs --check >/dev/null
node release/openapi.mjs --check >/dev/null
for img in "${!workspace[@]}"; do [ -f "$images_dir/$img.tar" ] || die "$images_dir/$img.tar is missing (make images)"; done
# Cached by a hash of the inputs: the files the artefacts are made from (tracked or not, ignored
# ones aside), the image archives and the tools' versions. Unchanged inputs and a dist/ whose
# SHA256SUMS still verify: nothing is rebuilt.
inputs_key() {
  {
    git ls-files -co --exclude-standard -- release sdk charts/sandbox-platform api-gateway/openapi.json \
      LICENSE CHANGELOG.md package.json package-lock.json crds/src | LC_ALL=C sort | xargs -d '\n' sha256sum
    sha256sum "$images_dir"/{sandbox-agent,operator,api-gateway,egress-proxy}.tar
    "$helm" version --short; node --version
  } | sha256sum | cut -c1-64
}
key="$(inputs_key)"
if [ -f "$dist/.inputs-sha256" ] && [ "$(cat "$dist/.inputs-sha256")" = "$key" ] \
  && (cd "$dist" && sha256sum --quiet -c SHA256SUMS 2>/dev/null); then
  say "dist/ is up to date (inputs unchanged: ${key:0:12}); nothing rebuilt"
  exit 0
fi
rm -rf "$dist" && mkdir -p "$dist"/{charts,images,sbom,npm,python,krew}

say "chart: image tags and appVersion $version"
cp -a charts/sandbox-platform "$work/sandbox-platform"
values="$work/sandbox-platform/values.yaml"
tags_before="$(grep -c "^    tag: " "$values")"
sed -i -E "s/^    tag: .*$/    tag: '$version'/" "$values"
# One tag line per image the chart deploys: images.{sandbox,operator,gateway} and egressProxy.image.
[ "$tags_before" = "${#workspace[@]}" ] && [ "$(grep -c "^    tag: '$version'$" "$values")" = "${#workspace[@]}" ] \
  || die "expected ${#workspace[@]} image tag lines in values.yaml (one per released image), found $tags_before"
"$helm" package "$work/sandbox-platform" --version "$version" --app-version "$version" -d "$dist/charts" >/dev/null
chart="$dist/charts/sandbox-platform-$version.tgz"
[ "$("$helm" show chart "$chart" | sed -n "s/^appVersion: //p" | tr -d "'\"")" = "$version" ] || die "appVersion of $chart is not $version"
[ "$(grep -c "^    tag: '$version'$" <<<"$("$helm" show values "$chart")")" = "${#workspace[@]}" ] || die "image tags of $chart are not $version"
grep -qx 'sandbox-platform/LICENSE' <<<"$(tar -tzf "$chart")" || die "LICENSE missing from $chart"

for img in sandbox-agent operator api-gateway egress-proxy; do
  out="$dist/images/$img-$version.oci.tar"
  digest="$(node release/retag.mjs "$images_dir/$img.tar" "$out" "$repo/$img:$version")"
  say "image $repo/$img:$version ${digest:0:19} ($(du -m "$out" | cut -f1) MiB)"
  sbom="$dist/sbom/$img-$version.spdx.json"
  node release/sbom.mjs "$out" "${workspace[$img]}" "$version" >"$sbom"
  if [ -n "${RELEASE_VENV:-}" ]; then
    "$RELEASE_VENV/bin/pyspdxtools" -i "$sbom" >"$work/spdx.log" 2>&1 && [ ! -s "$work/spdx.log" ] \
      || { cat "$work/spdx.log" >&2; die "$sbom is not valid SPDX 2.3"; }
  fi
done
if [ -n "${RELEASE_VENV:-}" ]; then say "SBOMs valid SPDX 2.3 (spdx-tools)"; else say "SBOMs not validated (RELEASE_VENV unset)"; fi
release/check-import.sh "$dist"/images/*.oci.tar

say "npm: @sandbox-platform/client (checked: empty project, import and require)"
SDK_REUSE_CHECKED=1 SDK_PACK_DEST="$dist/npm" sdk/scripts/check-ts-sdk.sh
say "npm: @sandbox-platform/cli (checked: bundle, kubectl plugin)"
sdk/scripts/check-cli.sh
(cd sdk/cli && npm pack --silent --pack-destination "$dist/npm" >/dev/null)
cli_tgz="$dist/npm/sandbox-platform-cli-$version.tgz"
cli_files="$(tar -tzf "$cli_tgz")"
for f in package/dist/sbx.cjs package/LICENSE package/README.md; do
  grep -qx "$f" <<<"$cli_files" || die "$f missing from $cli_tgz"
done
say "python: sandbox-platform wheel and sdist (checked: clean venv, mypy, pytest)"
SDK_REUSE_CHECKED=1 SDK_DIST_DEST="$dist/python" sdk/scripts/check-python-sdk.sh

say "krew: sbx-$version.tar.gz and its manifest"
mkdir -p "$work/krew" && cp sdk/cli/dist/sbx.cjs LICENSE "$work/krew/"
archive="$dist/krew/sbx-$version.tar.gz"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/krew" -cf - sbx.cjs LICENSE | gzip -n -9 >"$archive"
sha="$(sha256sum "$archive" | cut -c1-64)"
sed -E "s/^( +sha256: ).*$/\1'$sha'/" sdk/cli/krew/sandbox.yaml >"$dist/krew/sandbox.yaml"
grep -q "sha256: '$sha'" "$dist/krew/sandbox.yaml" || die "sha256 not written to the krew manifest"
grep -q "sbx-v$version/sbx-$version.tar.gz" "$dist/krew/sandbox.yaml" || die "the krew manifest's uri does not name sbx-$version.tar.gz"

cp api-gateway/openapi.json "$dist/openapi-$version.json"
(cd "$dist" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || die "SHA256SUMS does not verify"
echo "$key" >"$dist/.inputs-sha256"
say "dist/ ($(du -sm "$dist" | cut -f1) MiB):"
(cd "$dist" && find . -type f -printf '%P\t%s\n' | LC_ALL=C sort | awk -F'\t' '{printf "  %-52s %10d bytes\n", $1, $2}') >&2
