# The api-gateway (api-gateway/). Owned by the gateway area; included by the Makefile (mk/*.mk).
# Integration tests also run through `make test-integration` (api-gateway/jest.integration.config.js).

# Benchmark knobs (bench-gateway): sequential samples, warm-up calls, concurrent callers and seconds
# of the requests/second phase, samples of the (slow) pods/exec modes, and the rounds the modes are
# interleaved in (each round runs a slice of every mode, so load drift hits all of them alike).
BENCH_GATEWAY_ITERATIONS ?= 500
BENCH_GATEWAY_WARMUP ?= 50
BENCH_GATEWAY_CONCURRENCY ?= 8
BENCH_GATEWAY_SECONDS ?= 5
BENCH_GATEWAY_KEXEC_ITERATIONS ?= 100
BENCH_GATEWAY_ROUNDS ?= 10
# Calls per second through the deployed gateway (cluster mode): under its per-key limit
# (GATEWAY_KEY_MAX_REQUESTS_PER_SECOND, default 100), so the bench's own calls are never refused.
BENCH_GATEWAY_RPS ?= 90
BENCH_GATEWAY_ARGS = --iterations $(BENCH_GATEWAY_ITERATIONS) --warmup $(BENCH_GATEWAY_WARMUP) \
  --concurrency $(BENCH_GATEWAY_CONCURRENCY) --seconds $(BENCH_GATEWAY_SECONDS) --kexec-iterations $(BENCH_GATEWAY_KEXEC_ITERATIONS) \
  --rounds $(BENCH_GATEWAY_ROUNDS) --gateway-rps $(BENCH_GATEWAY_RPS)
# Local modes only (issue 12): the gateway before the hardening, bundled from this commit with
# `git archive` (the last commit before the first hardening change; override to compare with
# another), and the workers of the hostile tenant that attacks while tenant B's exec is measured.
BENCH_GATEWAY_BASELINE ?= cb3fb678623de0dc9cc60a71a03aafa8952ac635
BENCH_GATEWAY_ATTACK_WORKERS ?= 4
BENCH_GATEWAY_LOCAL_ARGS = $(BENCH_GATEWAY_ARGS) --baseline $(BENCH_GATEWAY_BASELINE) --attack-workers $(BENCH_GATEWAY_ATTACK_WORKERS)

# run-gateway: namespaces served and the dev key files (the master key is the operator's dev key,
# so tokens match a locally run operator).
GATEWAY_DEV_NAMESPACES ?= default
GATEWAY_DEV_KEYS := $(LOCALKUBE_DIR)/gateway-dev-api-keys.json
GATEWAY_DEV_MASTER_KEY := $(LOCALKUBE_DIR)/operator-dev-master-key

.PHONY: gateway-build test-gateway test-integration-gateway bench-gateway bench-gateway-local bench-gateway-local-split run-gateway bench

gateway-build: node-deps ## Compile the api-gateway (tsc -b api-gateway; incremental)
	nice npx tsc -b api-gateway

test-gateway: node-deps ## Unit and route tests of the api-gateway (inject() with fakes, local agents; no cluster)
	cd api-gateway && $(JEST)

test-integration-gateway: node-deps localkube ## Gateway integration tests: control-plane localkube, real in-process agents, MCP SDK client
	cd api-gateway && $(JEST) -c jest.integration.config.js

# Needs the full cluster with the platform deployed: BENCH_GATEWAY_URL and BENCH_GATEWAY_API_KEY
# (or the e2e setup's E2E_GATEWAY_URL / E2E_GATEWAY_API_KEY), BENCH_NAMESPACE (default sandbox-e2e),
# KUBECONFIG (default .localkube/kubeconfig), and pod IPs reachable from this host.
bench-gateway: node-deps platform-up ## exec `true` through the in-cluster gateway (paced under its per-key limit) vs direct to the agent vs pods/exec (p50/p99, req/s, ratios)
	set -a; . $(PLATFORM_ENV); set +a; \
	KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node api-gateway/bench/run.mjs $(BENCH_GATEWAY_ARGS)

bench-gateway-local: node-deps ## The gateway's own overhead, the Pod identity check on vs off (and, in their own processes, before/after the hardening and a tenant under attack), no cluster
	nice node api-gateway/bench/run.mjs --local $(BENCH_GATEWAY_LOCAL_ARGS)

bench-gateway-local-split: node-deps ## bench-gateway-local with gateway, trivial proxy and agent each in its own process (a deployment's topology)
	nice node api-gateway/bench/run.mjs --local --split $(BENCH_GATEWAY_LOCAL_ARGS)

# Runs the gateway in the foreground against $KUBECONFIG (default: the local cluster), serving
# GATEWAY_DEV_NAMESPACES with one generated API key (in GATEWAY_DEV_KEYS). Not for production: see the chart.
run-gateway: gateway-build ## Run the api-gateway locally on :8080 against $KUBECONFIG (dev API key file path printed)
	@mkdir -p $(LOCALKUBE_DIR)
	@if [ ! -s "$(GATEWAY_DEV_MASTER_KEY)" ]; then head -c 32 /dev/urandom > "$(GATEWAY_DEV_MASTER_KEY)"; chmod 600 "$(GATEWAY_DEV_MASTER_KEY)"; fi
	@if [ ! -s "$(GATEWAY_DEV_KEYS)" ]; then \
	  key="dev-$$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"; \
	  ns=$$(echo "$(GATEWAY_DEV_NAMESPACES)" | sed 's/[^,][^,]*/"&"/g'); \
	  printf '{"keys":[{"id":"dev","key":"%s","namespaces":[%s]}]}\n' "$$key" "$$ns" > "$(GATEWAY_DEV_KEYS)"; chmod 600 "$(GATEWAY_DEV_KEYS)"; \
	fi
	@echo "[run-gateway] API keys: $(GATEWAY_DEV_KEYS)"
	KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" GATEWAY_API_KEYS_FILE="$(GATEWAY_DEV_KEYS)" \
	  SANDBOX_MASTER_KEY_FILE="$(GATEWAY_DEV_MASTER_KEY)" GATEWAY_NAMESPACES="$(GATEWAY_DEV_NAMESPACES)" \
	  GATEWAY_IMAGE_ALLOWLIST="localhost/sandbox-platform/*" node api-gateway/dist/server.js

bench: bench-gateway bench-gateway-local
