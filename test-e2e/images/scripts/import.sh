#!/usr/bin/env bash
# Imports oci-archive tarballs into a containerd, skipping images that are already there.
#
#   import.sh [--address SOCKET] [--namespace NS] TARBALL...
#
# SOCKET defaults to the local cluster's containerd ($LOCALKUBE_DIR/containerd/containerd.sock);
# pass any other socket to import elsewhere. NS defaults to k8s.io, the namespace the kubelet's
# CRI plugin reads. An image is skipped when containerd already holds the same manifest digest
# under the same name and it is unpacked; otherwise `ctr images import` stores and unpacks it
# (into $CONTAINERD_SNAPSHOTTER when set, which ctr reads itself).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
localkube=${LOCALKUBE_DIR:-$repo/.localkube}
address=$localkube/containerd/containerd.sock
namespace=k8s.io
imgbuild=${IMGBUILD:-$localkube/images/build/bin/imgbuild}

usage() {
  echo "usage: $0 [--address SOCKET] [--namespace NS] TARBALL..." >&2
  exit 2
}

tarballs=()
while (($#)); do
  case $1 in
    --address) address=${2:?--address needs a socket path}; shift 2 ;;
    --namespace) namespace=${2:?--namespace needs a name}; shift 2 ;;
    -h | --help) usage ;;
    -*) echo "import: unknown option $1" >&2; usage ;;
    *) tarballs+=("$1"); shift ;;
  esac
done
((${#tarballs[@]})) || { echo "import: no tarballs given (build them with 'make images-base' or 'make images')" >&2; exit 2; }
[[ -S $address ]] || { echo "import: no containerd socket at $address (start the cluster with 'make cluster-up', or pass --address)" >&2; exit 1; }
[[ -x $imgbuild ]] || { echo "import: $imgbuild is missing (make images-base builds it; or set IMGBUILD)" >&2; exit 1; }
command -v ctr >/dev/null || { echo "import: ctr not found (apt-get install containerd)" >&2; exit 1; }

ctr_() { ctr --address "$address" --namespace "$namespace" "$@"; }

# present REF prints "<digest> <unpacked>" for REF, or nothing when containerd does not have it.
present() {
  ctr_ images check "name==$1" | awk -v ref="$1" '$1 == ref { print $3, $NF }'
}

imported=0 skipped=0
for t in "${tarballs[@]}"; do
  read -r ref digest bytes < <("$imgbuild" info "$t")
  size=$(awk -v b="$bytes" 'BEGIN { printf "%.1fMB", b / 1e6 }')
  if [[ $(present "$ref") == "$digest true" ]]; then
    printf 'import: %-46s %s %8s  skipped (already present)\n' "$ref" "${digest:0:19}" "$size"
    skipped=$((skipped + 1))
    continue
  fi
  start=$(date +%s%N)
  ctr_ images import "$t" >/dev/null
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  got=$(present "$ref")
  if [[ $got != "$digest true" ]]; then
    echo "import: $ref: after import containerd reports '${got:-nothing}', expected '$digest true'" >&2
    exit 1
  fi
  printf 'import: %-46s %s %8s  imported in %d.%03ds\n' "$ref" "${digest:0:19}" "$size" $((took / 1000)) $((took % 1000))
  imported=$((imported + 1))
done
echo "import: $imported imported, $skipped skipped into $address (namespace $namespace)"
