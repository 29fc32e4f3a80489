# Scale by simulation (issue 32): `make bench-scale` on the local cluster's simulated nodes
# (localkube's KWOK add-on, docs/localkube.md "Simulated nodes"). Not part of `make test`; the last
# of `make bench`, with one smaller burst (the Makefile's BENCH_SCALE_IN_BENCH). It needs a cluster
# started with LOCALKUBE_KWOK_NODES (it restarts the local cluster with BENCH_SCALE_NODES of them
# when it has none), takes about 70 minutes at the default sizes on 2 cores, and loads the shared machine.
# docs/benchmarks.md#bench-scale has what it measures and the figures.

# Burst sizes, concurrent creates of the minimal client, idle timeout of the largest burst, and push
# sizes run afterwards until one fails (empty: none).
BENCH_SCALE_SIZES ?= 1000,5000,10000
BENCH_SCALE_WORKERS ?= 32
BENCH_SCALE_IDLE_SECONDS ?= 600
BENCH_SCALE_PUSH ?=
# 0: skip the largest burst's idle GC (about 30 minutes at 10,000), e.g. to re-measure a failover.
BENCH_SCALE_IDLE_GC ?= 1
# Extra --set values of the bench's release, separated by spaces (e.g. operator.concurrency=32).
BENCH_SCALE_SET ?=
# Simulated nodes the local cluster is restarted with when it has none (right after `make run`).
BENCH_SCALE_NODES ?= 100

.PHONY: bench-scale
bench-scale: node-deps tools $(IMAGES_DIR)/operator.tar $(IMAGES_DIR)/api-gateway.tar images-import ## Sessions by the thousand on simulated nodes vs bare Secret+Pod creates: Ready p50/p99, per-second rates, operator CPU/RSS, gateway lookups and memory, API calls per session, failover, idle GC (restarts the local cluster with BENCH_SCALE_NODES simulated nodes when it has none)
	@# The local cluster (no KUBECONFIG given) without simulated nodes, as `make run` leaves it: restart
	@# it with them. The platform stays installed (etcd and the images persist across the restart).
	@if [ -z "$${KUBECONFIG:-}" ] && [ -z "$$($(LOCALKUBE_BIN) kubectl --kubeconfig $(LOCALKUBE_DIR)/kubeconfig get nodes -l type=kwok -o name)" ]; then \
	  echo "[bench-scale] the local cluster has no simulated node: restarting it with $(BENCH_SCALE_NODES) (make cluster-down; make cluster-up LOCALKUBE_KWOK_NODES=$(BENCH_SCALE_NODES))"; \
	  $(MAKE) --no-print-directory cluster-down && $(MAKE) --no-print-directory cluster-up LOCALKUBE_KWOK_NODES=$(BENCH_SCALE_NODES); \
	fi
	@KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" HELM=$(HELM) CHART=$(ROOT)/$(CHART) LOCALKUBE_DIR=$(LOCALKUBE_DIR) \
	  BENCH_SET_STRING="operator.podAnnotations.sandbox\.dev/image=$(call image_digest,operator) gateway.podAnnotations.sandbox\.dev/image=$(call image_digest,api-gateway)" \
	  BENCH_SET="$(BENCH_SCALE_SET)" \
	  nice node test-e2e/bench/scale/run.mjs --sizes $(BENCH_SCALE_SIZES) --workers $(BENCH_SCALE_WORKERS) \
	  --idle-seconds $(BENCH_SCALE_IDLE_SECONDS) $(if $(BENCH_SCALE_PUSH),--push $(BENCH_SCALE_PUSH)) \
	  $(if $(filter 0,$(BENCH_SCALE_IDLE_GC)),--no-idle-gc)
