# Sourced by check-ts-sdk.sh and check-python-sdk.sh: artefacts that passed their check, kept by a
# hash of their inputs, so `make release` right after the e2e tier's live SDK checks (make test
# runs both) copies what was checked instead of building and checking the same tree again.
#   checked_dir NAME          prints the cache directory of NAME for this tree's inputs
#   reuse_checked NAME DEST   with SDK_REUSE_CHECKED=1 (release.sh) and that directory present:
#                             copies its files into DEST (when set), says so, returns 0
# The inputs are release.sh's for the SDKs: what the packages are built from, the lock file and
# the toolchain's versions. A check that fails keeps nothing.
checked_dir() {
  local key
  key="$(
    cd "$root" && {
      git ls-files -co --exclude-standard -- sdk crds/src api-gateway/openapi.json package.json \
        package-lock.json tsconfig.base.json LICENSE CHANGELOG.md | LC_ALL=C sort | xargs -d '\n' sha256sum
      node --version; "${SDK_VENV:-$root/.cache/venv-sdk}/bin/python" --version 2>&1 || true
    } | sha256sum | cut -c1-16
  )"
  echo "$root/.cache/sdk-checked/$1-$key"
}

# keep_checked NAME FILE...: remember FILEs as the checked artefacts of NAME (older keys go).
keep_checked() {
  local name="$1" dir; shift
  dir="$(checked_dir "$name")"
  rm -rf "$root/.cache/sdk-checked/$name-"* && mkdir -p "$dir.tmp" && cp "$@" "$dir.tmp/" && mv "$dir.tmp" "$dir"
}

# reuse_checked NAME DEST: see the header; returns 1 (check and build as usual) otherwise.
reuse_checked() {
  local dir
  dir="$(checked_dir "$1")"
  [ "${SDK_REUSE_CHECKED:-}" = 1 ] && [ -d "$dir" ] || return 1
  if [ -n "$2" ]; then mkdir -p "$2" && cp "$dir"/* "$2/"; fi
  say "$(cd "$dir" && ls | tr '\n' ' ')checked earlier for these inputs ($(basename "$dir")); reused"
}
