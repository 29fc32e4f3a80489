#!/usr/bin/env bash
# Verify that a stopped localkube left nothing behind: no process (components, containerd, runc,
# kube-router, runsc, kwok), mount, network namespace (pods' and the isolation e2e's), veth, bridge,
# iptables or nftables rule, kube-router ipset, kubelet cgroup or listening port. Exits 1 and lists
# what remains otherwise.
#   usage: check-clean.sh <state-dir> [apiserver-port] [etcd-port]
set -uo pipefail
dir="$(cd "$1" 2>/dev/null && pwd || echo "$1")"
api_port="${2:-6443}"
etcd_port="${3:-2379}"
left=()

# Cluster processes: localkube components, containerd and its shims, runc, run with the state dir
# in their arguments. Other programs that merely name the directory (a shell or make recipe
# sourcing a file from it, an editor) are not the cluster's and are not counted.
procs="$(ps -eo pid=,comm=,args= | awk -v d="$dir/" 'index($0, d) && $2 ~ /^(localkube|containerd|runc|runsc|kube-|kwok|etcd|exe|versitygw)/' || true)"
[ -n "$procs" ] && left+=("processes:"$'\n'"$procs")

mounts="$(awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo)"
[ -n "$mounts" ] && left+=("mounts:"$'\n'"$mounts")

netns="$(ls /run/netns 2>/dev/null | grep -E '^(cni-|lk-e2e-)' || true)"
[ -n "$netns" ] && left+=("network namespaces (containerd cni-*, isolation e2e lk-e2e-*):"$'\n'"$netns")

links="$(ip -br link 2>/dev/null | awk '$1 == "lkbr0" || $1 ~ /^(veth|lkst)/ {print $1}')"
[ -n "$links" ] && left+=("links:"$'\n'"$links")

cgroups="$(ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null || true)"
[ -n "$cgroups" ] && left+=("kubelet cgroups:"$'\n'"$cgroups")

if command -v iptables-save >/dev/null 2>&1; then
  rules="$( (iptables-save; ip6tables-save) 2>/dev/null | grep -E 'KUBE-|kube-router|name: "localkube"' || true)"
  [ -n "$rules" ] && left+=("iptables rules:"$'\n'"$rules")
fi
# Debian's iptables is the nf_tables backend: the same rules seen through nft, when it is installed.
if command -v nft >/dev/null 2>&1; then
  nftrules="$(nft list ruleset 2>/dev/null | grep -E 'KUBE-|kube-router|localkube' || true)"
  [ -n "$nftrules" ] && left+=("nftables rules:"$'\n'"$nftrules")
fi
if command -v ipset >/dev/null 2>&1; then
  sets="$(ipset list -n 2>/dev/null | grep -E '^(inet6:)?(KUBE-SRC-|KUBE-DST-|kube-router-)' || true)"
  [ -n "$sets" ] && left+=("kube-router ipsets:"$'\n'"$sets")
fi

ports="$(ss -Hltn 2>/dev/null | awk -v ports=":$api_port :$etcd_port :$((etcd_port + 1)) :10250 :10248 :10256 :10249 :7480" \
  'BEGIN {n = split(ports, p, " ")} {for (i = 1; i <= n; i++) if ($4 ~ p[i] "$") print $4}')"
[ -n "$ports" ] && left+=("listening ports:"$'\n'"$ports")

if [ ${#left[@]} -gt 0 ]; then
  echo "[cluster-down] NOT clean; left behind:" >&2
  printf '%s\n' "${left[@]}" >&2
  exit 1
fi
echo "[cluster-down] clean: no process, mount, netns, veth, bridge, iptables rule, kubepods cgroup or listening port left (nor kube-router ipset, nftables rule or e2e netns)"
