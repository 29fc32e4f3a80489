#!/usr/bin/env bash
# Lifecycle checks of the local cluster that restart it, so they cannot run inside jest:
#   - a second `make cluster-up` reuses the running cluster and says so;
#   - a port already in use gives an error naming the port;
#   - a missing prerequisite (Go, disk space, node packages) says what to install;
#   - `make cluster-down` leaves nothing behind, and `make cluster-up` afterwards keeps objects (and
#     its daemons hold none of the caller's file descriptors);
#   - `make cluster-reset` wipes them;
#   - the node add-ons: kube-router's chains and ipsets, CoreDNS, RuntimeClass gvisor are there
#     while up, and cluster-down removes every chain, ipset and a leftover e2e network namespace.
# Run from the repository root (make test-e2e / make test-cluster-lifecycle). Leaves the cluster up.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export LOCALKUBE_DIR="${LOCALKUBE_DIR:-$PWD/.localkube}"
kubectl="$LOCALKUBE_DIR/bin/kubectl"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$tmp/out" | tail -20; }
# expect DESCRIPTION WANT_RC PATTERN -- COMMAND...: run COMMAND, check its exit code (any non-zero
# when WANT_RC is "fail") and that its output matches the extended regex PATTERN.
expect() {
  local what=$1 want=$2 pattern=$3
  shift 4
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if { [ "$want" = fail ] && [ $rc -ne 0 ] || [ "$want" = "$rc" ]; } && grep -qE -- "$pattern" "$tmp/out"; then
    ok "$what"
  else
    echo "# exit code $rc (wanted $want), output did not match /$pattern/ or code differed" >>"$tmp/out"
    not_ok "$what"
  fi
}

# expect_empty DESCRIPTION -- COMMAND...: COMMAND succeeds and prints nothing.
expect_empty() {
  local what=$1
  shift 2
  if "$@" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ]; then ok "$what"; else not_ok "$what"; fi
}

echo "# cluster lifecycle checks (state dir $LOCALKUBE_DIR)"
expect "make cluster-up starts (or reuses) the cluster" 0 "Cluster is up" -- make cluster-up
expect "a second make cluster-up reuses the running cluster and says so" 0 "already running .*reusing it" -- make cluster-up

marker="m-$RANDOM$RANDOM"
"$kubectl" create namespace lifecycle-check >/dev/null 2>&1
"$kubectl" -n lifecycle-check delete configmap marker --ignore-not-found >/dev/null 2>&1
expect "create a marker object" 0 "created" -- "$kubectl" -n lifecycle-check create configmap marker --from-literal=value="$marker"

# A running pod during cluster-down: its veth, netns, mounts and iptables rules must go too.
"$kubectl" -n lifecycle-check delete pod sleeper --ignore-not-found --wait >/dev/null 2>&1
expect "a pod runs before cluster-down" 0 "condition met" -- sh -c "
  '$kubectl' -n lifecycle-check run sleeper --image=localhost/sandbox-platform/testbox:dev \
    --image-pull-policy=IfNotPresent --restart=Always --command -- sleep 3600 >/dev/null &&
  '$kubectl' -n lifecycle-check wait --for=condition=Ready pod/sleeper --timeout=60s"

expect "a port already in use gives an error naming it" fail "port 6443 \(needed by kube-apiserver\) is already in use" -- \
  make cluster-up LOCALKUBE_PROFILE=controlplane LOCALKUBE_DIR="$tmp/second" LOCALKUBE_PORT=6443 LOCALKUBE_ETCD_PORT=12379

no_go_path="$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/go" ] || echo "$d"; done | paste -sd:)"
expect "a missing Go toolchain says what to install" fail "Go is not installed.*Install Go 1\.25 or newer" -- \
  env PATH="$no_go_path" LOCALKUBE_CACHE="$tmp/cache" make localkube
expect "too little disk space says how much is needed" fail "GB free .*needs about 100000 GB" -- \
  env LOCALKUBE_CACHE="$tmp/cache" LOCALKUBE_MIN_FREE_GB=100000 make localkube
expect "missing node packages say what to install" fail "missing node prerequisites: containerd.*apt-get install containerd runc containernetworking-plugins iptables" -- \
  env PATH=/nonexistent "$PWD/test-e2e/localkube/bin/localkube" up --profile=cluster --dir="$tmp/third"

expect "kube-router's policy controller hooked its chains (iptables FORWARD -> KUBE-ROUTER-FORWARD)" 0 "KUBE-ROUTER-FORWARD" -- \
  iptables -S FORWARD
# A NetworkPolicy with a pod peer makes kube-router create ipsets (the chart may be uninstalled here).
"$kubectl" -n lifecycle-check apply -f - >/dev/null 2>&1 <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: lifecycle-peers }
spec:
  podSelector: { matchLabels: { run: sleeper } }
  ingress: [{ from: [{ podSelector: { matchLabels: { run: client } } }] }]
YAML
expect "kube-router keeps NetworkPolicy peers in ipsets (KUBE-SRC-/KUBE-DST-)" 0 "KUBE-(SRC|DST)-" -- sh -c \
  'for i in $(seq 50); do ipset list -n | grep -qE "^KUBE-(SRC|DST)-" && break; sleep 0.2; done; ipset list -n'
expect "cluster DNS runs (Deployment kube-system/coredns available, Service kube-dns 198.19.0.10)" 0 "^1 198.19.0.10$" -- sh -c "
  '$kubectl' -n kube-system get deploy coredns -o jsonpath='{.status.availableReplicas}' && printf ' ' &&
  '$kubectl' -n kube-system get svc kube-dns -o jsonpath='{.spec.clusterIP}' && echo"
if [ "${LOCALKUBE_GVISOR:-true}" = true ]; then  # the default of mk/cluster.mk
  expect "RuntimeClass gvisor is registered (handler runsc)" 0 "^runsc$" -- "$kubectl" get runtimeclass gvisor -o jsonpath='{.handler}{"\n"}'
  # A gVisor pod running during cluster-down: its sandbox, gofers, waiters (the runsc wrapper's,
  # test-e2e/localkube/gvisor.go), mounts and netns must go too.
  "$kubectl" -n lifecycle-check delete pod sleeper-gvisor --ignore-not-found --wait >/dev/null 2>&1
  expect "a gVisor pod runs before cluster-down" 0 "condition met" -- sh -c "
    '$kubectl' -n lifecycle-check run sleeper-gvisor --image=localhost/sandbox-platform/testbox:dev \
      --image-pull-policy=IfNotPresent --restart=Always --overrides='{\"spec\":{\"runtimeClassName\":\"gvisor\"}}' \
      --command -- sleep 3600 >/dev/null &&
    '$kubectl' -n lifecycle-check wait --for=condition=Ready pod/sleeper-gvisor --timeout=90s"
fi
# gvisor_left prints runsc processes and the wrapper's waiters of this state dir.
gvisor_left() { ps -eo comm=,args= | awk -v d="$LOCALKUBE_DIR/" 'index($0, d) && $1 ~ /^runsc/'; }

# A network namespace and veth a killed isolation e2e would leave: cluster-down removes them too.
ip netns add lk-e2e-lifecycle 2>/dev/null
ip link add lkst-lc type veth peer name eth0 netns lk-e2e-lifecycle 2>/dev/null

expect "make cluster-down stops everything and leaves nothing behind" 0 "\[cluster-down\] clean: no process, mount, netns, veth, bridge, iptables rule, kubepods cgroup or listening port left" -- make cluster-down
expect "after cluster-down no bridge is left (ip link)" 1 "" -- ip link show lkbr0
expect_empty "after cluster-down no runsc process or waiter is left (ps)" -- gvisor_left
expect_empty "after cluster-down nothing listens on 6443 (ss)" -- ss -Hltn "sport = :6443"
expect_empty "after cluster-down no kube-router chain is left (iptables-save)" -- sh -c \
  "iptables-save | grep -E 'KUBE-(ROUTER|NWPLCY|POD-FW)' || true"
expect_empty "after cluster-down no kube-router ipset is left (ipset list -n)" -- sh -c \
  "ipset list -n | grep -E '^(inet6:)?(KUBE-SRC-|KUBE-DST-|kube-router-)' || true"
expect_empty "after cluster-down the leftover e2e netns and veth are gone" -- sh -c \
  "ip netns list | grep lk-e2e- ; ip -br link | grep lkst || true"

# Started while holding a lock: the daemons must not inherit its descriptor (nor a caller's pipe).
expect "make cluster-up after cluster-down" 0 "Cluster is up" -- flock "$tmp/held.lock" make cluster-up
expect "the cluster's daemons did not inherit the caller's descriptors (its lock is free)" 0 "^free$" -- \
  flock -n "$tmp/held.lock" echo free
expect "objects survive cluster-down and cluster-up (etcd data persists)" 0 "^$marker\$" -- \
  "$kubectl" -n lifecycle-check get configmap marker -o jsonpath='{.data.value}{"\n"}'

expect "the pod runs again after cluster-up (the kubelet recreates its sandbox)" 0 "condition met" -- \
  "$kubectl" -n lifecycle-check wait --for=condition=Ready pod/sleeper --timeout=60s

expect "make cluster-reset wipes the state" 0 "deleted the cluster state" -- make cluster-reset
expect "make cluster-up after cluster-reset" 0 "Cluster is up" -- make cluster-up
expect "objects are gone after cluster-reset" 1 "NotFound" -- "$kubectl" get namespace lifecycle-check

echo "1..$n"
if [ "$failed" -gt 0 ]; then
  echo "# $failed of $n lifecycle checks failed"
  exit 1
fi
echo "# all $n lifecycle checks passed"
