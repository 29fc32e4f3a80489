# The SandboxSession operator (operator/). Owned by the operator area; included by the Makefile.
# Integration tests run through `make test-integration` (operator/jest.integration.config.js).

# Benchmark knobs: sessions per provisioning round, rounds, session counts of the RSS phase.
BENCH_OPERATOR_SESSIONS ?= 200
BENCH_OPERATOR_ROUNDS ?= 3
BENCH_OPERATOR_RSS ?= 1000,5000
BENCH_OPERATOR_CONCURRENCY ?= 16
# Environment of the operator in the RSS phase: the recommended deployment setting (operator/README.md).
BENCH_OPERATOR_ENV ?= NODE_OPTIONS=--max-old-space-size=128

.PHONY: operator-build test-operator test-integration-operator bench-operator bench-operator-tracing run-operator audit-operator bench

operator-build: node-deps ## Compile the operator (tsc -b operator; incremental)
	nice npx tsc -b operator

test-operator: node-deps ## Unit tests of the operator (fakes only, no cluster)
	cd operator && $(JEST)

# tools: helm renders the chart's operator RBAC and Lease for watch-namespaces.test.ts.
test-integration-operator: node-deps localkube operator-build tools ## Operator integration tests on a control-plane-only localkube
	cd operator && $(JEST) -c jest.integration.config.js

bench-operator: node-deps localkube operator-build ## Operator vs direct creates of Secret+Pod pairs, throughput, RSS at 1,000/5,000 sessions
	nice node operator/bench/run.mjs --sessions $(BENCH_OPERATOR_SESSIONS) --rounds $(BENCH_OPERATOR_ROUNDS) \
	  --rss "$(BENCH_OPERATOR_RSS)" --concurrency $(BENCH_OPERATOR_CONCURRENCY) --operator-env "$(BENCH_OPERATOR_ENV)"

# Reconciles per round and rounds of the tracing benchmark.
BENCH_TRACING_RECONCILES ?= 20000
BENCH_TRACING_ROUNDS ?= 7

bench-operator-tracing: node-deps ## What tracing costs a reconcile: off vs on (100%, OTLP to a loopback sink) vs on (0%), same run
	nice node operator/bench/tracing-run.mjs --reconciles $(BENCH_TRACING_RECONCILES) --rounds $(BENCH_TRACING_ROUNDS)

# Runs the operator in the foreground against $KUBECONFIG (default: the local cluster), with a
# throwaway master key unless SANDBOX_MASTER_KEY_FILE is set. Not for production: see the chart.
run-operator: operator-build ## Run the operator locally against $KUBECONFIG (default .localkube/kubeconfig)
	@key="$${SANDBOX_MASTER_KEY_FILE:-$(LOCALKUBE_DIR)/operator-dev-master-key}"; \
	if [ ! -s "$$key" ]; then mkdir -p "$$(dirname "$$key")"; head -c 32 /dev/urandom > "$$key"; chmod 600 "$$key"; fi; \
	KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" SANDBOX_MASTER_KEY_FILE="$$key" LEADER_ELECT=false \
	  node --max-old-space-size=128 operator/dist/main.js

audit-operator: ## npm audit of the operator's runtime dependencies (the registry may refuse; see operator/README.md)
	npm audit --omit=dev -w operator

bench: bench-operator bench-operator-tracing
