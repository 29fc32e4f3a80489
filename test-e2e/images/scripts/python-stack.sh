#!/usr/bin/env bash
# The Python stack of the code interpreter (docs/adr/0033-code-interpreter.md): the pinned wheels
# of test-e2e/images/python/requirements.txt (CPython 3.11, manylinux x86_64) downloaded from PyPI
# once into .cache/python-stack/wheels-<key>, <key> = a hash of the requirements and this script,
# then installed offline:
#
#   python-stack.sh venv   .cache/python-stack/venv: the unit tests' kernel (sandbox-agent)
#   python-stack.sh site   /opt/sandbox-python/lib: what the sandbox-python image copies (the image
#                          builder reads host paths, as it reads Debian packages; a .pth file in
#                          the image puts the directory on Debian python3.11's sys.path)
#
# Each target keeps a stamp with its key and is left alone when the key is unchanged. Byte code is
# compiled with unchecked hashes: the image's files have mtime 0, so timestamp-checked .pyc files
# would all be stale there and every kernel start would compile IPython again.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
requirements="$here/../python/requirements.txt"
cache="$repo/.cache/python-stack"
site_dir="${PYTHON_STACK_SITE:-/opt/sandbox-python/lib}"
python="${PYTHON_STACK_PYTHON:-python3}"

key="$(cat "$requirements" "$0" | sha256sum | cut -c1-16)"
wheels="$cache/wheels-$key"

die() { echo "python-stack: $*" >&2; exit 1; }

"$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || die "$python is not CPython 3.11 (the image's Debian python3.11 loads these wheels); set PYTHON_STACK_PYTHON"

download() {
  [[ -f "$wheels/.complete" ]] && return
  rm -rf "$wheels.tmp" && mkdir -p "$wheels.tmp"
  echo "python-stack: downloading $(grep -c '==' "$requirements") pinned wheels into $wheels"
  "$python" -m pip download --quiet --dest "$wheels.tmp" --no-deps --only-binary=:all: \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --python-version 3.11 --implementation cp -r "$requirements"
  touch "$wheels.tmp/.complete"
  rm -rf "$wheels" && mv "$wheels.tmp" "$wheels"
}

stamped() { [[ -f "$1/.python-stack" && "$(cat "$1/.python-stack")" == "$key" ]]; }

case "${1:-}" in
  venv)
    target="$cache/venv"
    stamped "$target" && exit 0
    download
    rm -rf "$target"
    "$python" -m venv "$target"
    "$target/bin/python" -m pip install --quiet --no-index --find-links "$wheels" --no-deps -r "$requirements"
    echo "$key" > "$target/.python-stack"
    echo "python-stack: $target ready"
    ;;
  site)
    stamped "$site_dir" && exit 0
    download
    rm -rf "$site_dir" && mkdir -p "$site_dir"
    "$python" -m pip install --quiet --no-index --find-links "$wheels" --no-deps --no-compile \
      --target "$site_dir" -r "$requirements"
    rm -rf "$site_dir/bin"
    "$python" -m compileall -q -j 2 --invalidation-mode unchecked-hash "$site_dir" >/dev/null
    echo "$key" > "$site_dir/.python-stack"
    echo "python-stack: $site_dir ready ($(du -sh "$site_dir" | cut -f1))"
    ;;
  *)
    die "usage: python-stack.sh venv|site"
    ;;
esac
