# Warm pools (issue 14, docs/adr/0016): the warm-vs-cold benchmark on the local cluster. The e2e
# spec (test-e2e/specs/pool/) runs with the rest of the e2e tier; the operator's integration test
# (operator/test/integration/pools.test.ts) with the integration tier.

# Warm and cold samples each, and the pool size (= warm samples per round, refilled in between).
BENCH_POOL_ARGS ?= --samples 30 --batch 5
.PHONY: bench-pool bench
bench-pool: node-deps platform-up ## Warm pool vs cold: create-or-get + exec `true` through the in-cluster gateway (p50/p99, ratio, where the time goes)
	@set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/pool-run.mjs $(BENCH_POOL_ARGS)
bench: bench-pool
