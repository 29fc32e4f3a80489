# The local Kubernetes (test-e2e/localkube): build, start, stop, inspect, wipe. See docs/localkube.md.
# State lives in $(LOCALKUBE_DIR) (default .localkube/, exported by the top-level Makefile).

LOCALKUBE_SRC := test-e2e/localkube
LOCALKUBE_BIN := $(ROOT)/$(LOCALKUBE_SRC)/bin/localkube
# cluster = control plane + node (needs root); controlplane = etcd + apiserver + controller-manager.
LOCALKUBE_PROFILE ?= cluster
LOCALKUBE_PORT ?= 6443
LOCALKUBE_ETCD_PORT ?= 2379
LOCALKUBE_TIMEOUT ?= 5m
# Debian packages the node needs (containerd, runc, CNI plugins, iptables, ipset for kube-router).
LOCALKUBE_DEBS := containerd runc containernetworking-plugins iptables ipset
# NetworkPolicy enforcement (kube-router's policy controller) and gVisor (RuntimeClass gvisor):
# both on by default; `make cluster-up LOCALKUBE_NETWORK_POLICY=false` starts a node that stores
# NetworkPolicies but enforces none (the isolation e2e must then fail: make test-isolation-unenforced).
LOCALKUBE_NETWORK_POLICY ?= true
# The snapshot object store (versitygw, an S3 server from its Go module; docs/snapshots.md) on
# 198.18.0.1:7480, started and stopped with the cluster: `make cluster-up LOCALKUBE_S3=false` leaves it out.
LOCALKUBE_S3 ?= true
# gVisor runs through containerd's runc shim and a generated runsc wrapper (docs/localkube.md,
# "Isolation"); `make cluster-up LOCALKUBE_GVISOR=false` leaves RuntimeClass gvisor out and the
# gVisor specs skip.
LOCALKUBE_GVISOR ?= true
# Extra runsc flags, e.g. "--platform=ptrace" to benchmark another platform (docs/localkube.md).
LOCALKUBE_RUNSC_FLAGS ?=
# kubelet podPidsLimit (processes and threads per pod); 0 = unlimited, only to show the PID test fails.
LOCALKUBE_POD_PIDS_LIMIT ?= 1024
LOCALKUBE_ADDONS := test-e2e/localkube/addons/build.sh
# Simulated nodes run by KWOK next to the real node (opt-in, docs/localkube.md "Simulated nodes"):
# `make cluster-up LOCALKUBE_KWOK_NODES=100` builds KWOK (test-e2e/localkube/addons/kwok/build.sh)
# and starts it; a start without it removes the simulated nodes of an earlier start.
LOCALKUBE_KWOK_NODES ?= 0
LOCALKUBE_KWOK := test-e2e/localkube/addons/kwok/build.sh

.PHONY: localkube
localkube: ## Build the localkube binary (cached: unchanged sources cost no compile)
	@$(LOCALKUBE_SRC)/build.sh >/dev/null

.PHONY: localkube-addons
localkube-addons: ## Build kube-router, CoreDNS, gVisor's runsc, the local-path provisioner and versitygw (S3) from their Go modules (cached by a hash of their inputs)
	@$(LOCALKUBE_ADDONS) kube-router coredns gvisor local-path-provisioner versitygw

.PHONY: localkube-node-deps
localkube-node-deps: ## Install containerd, runc, CNI plugins, iptables and ipset with apt-get when missing
	@missing=""; \
	for b in containerd containerd-shim-runc-v2 runc iptables ipset; do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	for p in bridge host-local loopback portmap; do [ -x /usr/lib/cni/$$p ] || [ -x /opt/cni/bin/$$p ] || missing="$$missing cni-$$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "[cluster-up] installing node prerequisites (missing:$$missing): apt-get install $(LOCALKUBE_DEBS)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(LOCALKUBE_DEBS) >/dev/null || \
	      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(LOCALKUBE_DEBS) >/dev/null; }; \
	  else \
	    echo "[cluster-up] error: missing node prerequisites:$$missing. Install them as root: apt-get install $(LOCALKUBE_DEBS)" >&2; \
	    echo "[cluster-up] (or use LOCALKUBE_PROFILE=controlplane for a control plane without a node)" >&2; exit 1; \
	  fi; \
	fi

.PHONY: cluster-up
cluster-up: ## Start the local cluster in the background (reuses a running one); writes .localkube/kubeconfig
	@if [ "$(LOCALKUBE_PROFILE)" = cluster ]; then $(MAKE) localkube-node-deps; fi
	@$(LOCALKUBE_SRC)/build.sh >/dev/null
	@node_flags=""; \
	if [ "$(LOCALKUBE_PROFILE)" = cluster ]; then \
	  node_flags="--network-policy=$(LOCALKUBE_NETWORK_POLICY) --pod-pids-limit=$(LOCALKUBE_POD_PIDS_LIMIT)"; \
	  if [ "$(LOCALKUBE_NETWORK_POLICY)" = true ]; then \
	    node_flags="$$node_flags --kube-router=$$($(LOCALKUBE_ADDONS) kube-router)/kube-router"; fi; \
	  if [ "$(LOCALKUBE_GVISOR)" = true ]; then node_flags="$$node_flags --runsc=$$($(LOCALKUBE_ADDONS) gvisor)/runsc"; fi; \
	  if [ "$(LOCALKUBE_S3)" = true ]; then node_flags="$$node_flags --s3=$$($(LOCALKUBE_ADDONS) versitygw)/versitygw"; fi; \
	  if [ "$(LOCALKUBE_KWOK_NODES)" != 0 ]; then \
	    node_flags="$$node_flags --kwok=$$($(LOCALKUBE_KWOK))/kwok --kwok-nodes=$(LOCALKUBE_KWOK_NODES)"; fi; \
	fi; \
	$(LOCALKUBE_BIN) start --dir=$(LOCALKUBE_DIR) --profile=$(LOCALKUBE_PROFILE) \
	  --port=$(LOCALKUBE_PORT) --etcd-port=$(LOCALKUBE_ETCD_PORT) --timeout=$(LOCALKUBE_TIMEOUT) $$node_flags \
	  "--runsc-flags=$(LOCALKUBE_RUNSC_FLAGS)"
	@if [ "$(LOCALKUBE_PROFILE)" = cluster ]; then \
	  echo "[cluster-up] building and importing the base images (pause, testbox, coredns, local-path-provisioner)"; \
	  $(MAKE) images-base images-import; \
	  echo "[cluster-up] cluster DNS (CoreDNS, Service kube-system/kube-dns $(LOCALKUBE_DNS_IP)), dynamic provisioning (local-path, the default StorageClass)"; \
	  $(LOCALKUBE_BIN) addons --dir=$(LOCALKUBE_DIR); \
	fi
	@echo ""
	@echo "Cluster is up. Use it with:"
	@echo "  export KUBECONFIG=$(LOCALKUBE_DIR)/kubeconfig"
	@echo "  $(LOCALKUBE_DIR)/bin/kubectl get nodes,pods -A     # kubectl of the cluster's version"
	@echo "Status: make cluster-status   Stop: make cluster-down   Wipe: make cluster-reset   Logs: $(LOCALKUBE_DIR)/logs/"

LOCALKUBE_PAUSE_IMAGE := localhost/sandbox-platform/pause:3.10
LOCALKUBE_DNS_IP := 198.19.0.10

.PHONY: cluster-down
cluster-down: ## Stop the local cluster; verify no process, mount, netns, veth, bridge, iptables rule or port is left
	@$(LOCALKUBE_SRC)/build.sh >/dev/null
	@$(LOCALKUBE_BIN) down --dir=$(LOCALKUBE_DIR)
	@$(LOCALKUBE_SRC)/check-clean.sh $(LOCALKUBE_DIR) $(LOCALKUBE_PORT) $(LOCALKUBE_ETCD_PORT)

.PHONY: cluster-status
cluster-status: ## Is the local cluster running? readyz and nodes
	@$(LOCALKUBE_SRC)/build.sh >/dev/null
	@$(LOCALKUBE_BIN) status --dir=$(LOCALKUBE_DIR)

.PHONY: cluster-reset
cluster-reset: ## Stop the local cluster and delete its state (etcd data, certificates, imported images)
	@$(LOCALKUBE_SRC)/build.sh >/dev/null
	@$(LOCALKUBE_BIN) reset --dir=$(LOCALKUBE_DIR)

.PHONY: test-localkube
test-localkube: ## gofmt, go vet and the Go unit tests of localkube (host cleanup parsing, process matching, kube-router readiness)
	@cd $(LOCALKUBE_SRC) && test -z "$$(gofmt -l .)" || { echo "gofmt: files need formatting:"; gofmt -l .; exit 1; }
	cd $(LOCALKUBE_SRC) && nice go vet . && nice go test -count=1 .

.PHONY: test-isolation-unenforced
# false: stop the cluster at the end instead of restarting it with its protections (make test).
ISOLATION_UNENFORCED_RESTORE ?= true
test-isolation-unenforced: node-deps ## Prove the isolation e2e can fail: rerun the matrix and the PID-limit spec on a cluster without the enforcer and without podPidsLimit (restarts the cluster, then again with them)
	ISOLATION_UNENFORCED_RESTORE=$(ISOLATION_UNENFORCED_RESTORE) test-e2e/specs/isolation/unenforced.sh

# Isolation benchmark knobs: interleaved rounds, exec calls per mode per round, sessions per runtime.
BENCH_ISOLATION_ARGS ?= --rounds 5 --calls 100 --sessions 3
.PHONY: bench-isolation bench
bench-isolation: node-deps platform-up ## gVisor vs runc (agent exec p50/p99, create-to-Ready) and gateway exec with vs without the NetworkPolicy enforcer, side by side
	@set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/run.mjs $(BENCH_ISOLATION_ARGS)
bench: bench-isolation

# Probe cost benchmark knobs: idle agent Pods per phase (4: with 8, exec probes saturate 2 cores), CPU
# window per phase, interleaved rounds.
BENCH_PROBES_ARGS ?= --pods 4 --window-seconds 20 --rounds 2
.PHONY: bench-probes
bench-probes: node-deps platform-up ## Node CPU of idle agent Pods with exec probes vs HTTP probes vs no Pods, per runtime, side by side
	@KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/probes-run.mjs $(BENCH_PROBES_ARGS)
bench: bench-probes
