#!/usr/bin/env bash
# Builds and checks the Python SDK's artefacts: `python -m build` (sdist + wheel, PEP 517 with
# hatchling from PyPI), the wheel installed into a clean venv (import, version, py.typed), mypy
# --strict, and pytest (unit tests; with --live also the live tests, which then must not skip)
# against the installed wheel. Tools come from the venv mk/sdk.mk makes ($SDK_VENV).
#   SDK_DIST_DEST      also keep the wheel and the sdist in this directory (make release)
#   SDK_REUSE_CHECKED  1: when this tree's wheel and sdist already passed (checked-cache.sh), copy them
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
pkg="$root/sdk/python"
venv="${SDK_VENV:-$root/.cache/venv-sdk}"
live=false; [ "${1:-}" = --live ] && live=true
say() { echo "[sdk-py] $*" >&2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
. "$root/sdk/scripts/checked-cache.sh"
if ! $live && reuse_checked python-sdk "${SDK_DIST_DEST:-}"; then exit 0; fi

say "python -m build"
"$venv/bin/python" -m build --outdir "$work/dist" "$pkg" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
wheel="$(ls "$work"/dist/*.whl)"
say "built $(cd "$work/dist" && ls | tr '\n' ' ')"
for a in "$wheel" "$work"/dist/*.tar.gz; do
  "$venv/bin/python" -c 'import sys, tarfile, zipfile
a = sys.argv[1]
names = zipfile.ZipFile(a).namelist() if a.endswith(".whl") else tarfile.open(a).getnames()
sys.exit(not any(n.endswith("/LICENSE") or n.endswith("licenses/LICENSE") for n in names))' "$a" \
    || { say "LICENSE missing from $(basename "$a")"; exit 1; }
done
if [ -n "${SDK_DIST_DEST:-}" ]; then mkdir -p "$SDK_DIST_DEST" && cp "$work"/dist/* "$SDK_DIST_DEST/"; fi
"$venv/bin/python" -c 'import sys, zipfile; sys.exit(not any(n.endswith("sandbox_platform/py.typed") for n in zipfile.ZipFile(sys.argv[1]).namelist()))' "$wheel" \
  || { say "py.typed missing from the wheel"; exit 1; }

say "install the wheel into a clean venv"
python3 -m venv "$work/clean"
"$work/clean/bin/pip" install --quiet --disable-pip-version-check "$wheel"
"$work/clean/bin/python" - "$pkg" <<'PY'
import sys, pathlib, re
import sandbox_platform as sp
expected = re.search(r"__version__ = \"(.+)\"", (pathlib.Path(sys.argv[1]) / "src/sandbox_platform/_version.py").read_text()).group(1)
assert sp.__version__ == expected, (sp.__version__, expected)
assert "site-packages" in sp.__file__, sp.__file__
print(f"[sdk-py] clean venv imports sandbox_platform {sp.__version__} from {pathlib.Path(sp.__file__).parent}", file=sys.stderr)
PY

say "mypy --strict"
(cd "$pkg" && "$venv/bin/mypy" --config-file pyproject.toml)

say "pytest against the installed wheel$($live && echo ' (live tests required)')"
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# The tests import the installed package, not src/ (pytest's rootdir is sdk/python: src is not on sys.path).
rc=0
(cd "$pkg" && if $live; then SDK_REQUIRE_LIVE=1 "$venv/bin/pytest" -p no:cacheprovider; else "$venv/bin/pytest" -p no:cacheprovider -m 'not live'; fi) || rc=$?
# Back to the editable install for development.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e "$pkg"
[ "$rc" = 0 ] || exit "$rc"
keep_checked python-sdk "$work"/dist/*
say "ok"
