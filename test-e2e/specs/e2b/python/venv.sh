#!/usr/bin/env bash
# Creates .cache/venv-e2b with the pinned official Python e2b SDK (requirements.txt), once per
# change of requirements.txt (a stamp holds its hash). Prints the venv's python. Used by
# `make e2b-venv` and by the Python e2e spec itself, so `make test` needs nothing more.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
venv="${E2B_VENV:-$root/.cache/venv-e2b}"
python="${E2B_PYTHON:-python3}"
want=$(sha256sum "$here/requirements.txt" | cut -c1-64)
if [ "$(cat "$venv/.stamp" 2>/dev/null || true)" != "$want" ]; then
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "venv.sh: $python is older than 3.10" >&2; exit 1; }
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  echo "$want" >"$venv/.stamp"
fi
echo "$venv/bin/python"
