#!/usr/bin/env bash
# release/check-import.sh ARCHIVE...: each oci-archive imports with plain `ctr images import` into a
# private containerd (own root, state and socket in a temp dir; never the system's or the
# cluster's), is listed under the name in its index.json, and runs: `node --version` in it.
set -euo pipefail
say() { echo "[release] $*" >&2; }
(($#)) || { echo "usage: $0 ARCHIVE..." >&2; exit 2; }
[[ $(id -u) == 0 ]] || { say "error: a private containerd needs root"; exit 1; }
for t in containerd ctr; do command -v "$t" >/dev/null || { say "error: $t not found (apt-get install containerd)"; exit 1; }; done
work="$(mktemp -d)"
sock="$work/c.sock"
cleanup() {
  [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  # Snapshots may hold overlay mounts under the temp root.
  grep -o " $work/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/config.toml" <<TOML
version = 2
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/opt"
TOML
containerd --config "$work/config.toml" >"$work/log" 2>&1 &
pid=$!
for ((i = 0; i < 100; i++)); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || { cat "$work/log" >&2; say "error: the private containerd did not start"; exit 1; }
ctr_() { ctr --address "$sock" -n release-check "$@"; }
for a in "$@"; do
  ref="$(tar -xOf "$a" index.json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).manifests[0].annotations["io.containerd.image.name"]))')"
  ctr_ images import "$a" >/dev/null
  ctr_ images ls -q | grep -qx "$ref" || { say "error: $ref not listed after ctr images import $(basename "$a")"; exit 1; }
  v="$(timeout 60 ctr --address "$sock" -n release-check run --rm --read-only "$ref" "check-$RANDOM" /usr/bin/node --version 2>&1)" \
    || { say "error: $ref does not run: $v"; exit 1; }
  say "ctr images import $(basename "$a"): $ref, runs node $v"
done
