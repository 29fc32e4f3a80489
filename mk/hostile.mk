# Hostile tenant (issue 12) on the local cluster: another tenant's exec through the in-cluster
# gateway, quiet vs under attack by a session running the hostile-agent image. The e2e side is
# test-e2e/specs/hostile (part of test-e2e); the local-process bench is bench-gateway-local.

# Knobs: samples per mode, interleaved rounds, concurrent attack requests.
BENCH_HOSTILE_ARGS ?= --iterations 300 --rounds 6 --attack-workers 4

.PHONY: bench-hostile bench
bench-hostile: node-deps platform-up ## Tenant B's exec p50/p99 through the in-cluster gateway, tenant A quiet vs attacking (goal <= 2x), gateway peak RSS
	@set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/hostile-run.mjs $(BENCH_HOSTILE_ARGS)
bench: bench-hostile
