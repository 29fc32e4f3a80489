# The single entry point. `make run` brings everything up on a local Kubernetes built from source;
# `make test` runs every tier. Area-specific targets live in mk/*.mk (one file per area).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
export LOCALKUBE_DIR ?= $(ROOT)/.localkube
# The compiled Go programs (localkube, its add-ons, helm, kubeconform, promtool) and npm ci's
# node_modules (test-support/scripts/node-deps.sh) are cached by a hash of their inputs and written
# atomically (temp name, then rename), so every clone on this machine shares one cache: a fresh
# clone (CI) reuses them instead of building again. Set PLATFORM_CACHE (or LOCALKUBE_CACHE /
# TOOLS_CACHE) to move it; `make cache-clean` empties it.
export PLATFORM_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/sandbox-platform
export LOCALKUBE_CACHE ?= $(PLATFORM_CACHE)/localkube
export TOOLS_CACHE ?= $(PLATFORM_CACHE)/tools
JEST := node --experimental-vm-modules $(ROOT)/node_modules/jest/bin/jest.js

include $(sort $(wildcard mk/*.mk))

# `make bench` ends with bench-scale (it restarts the local cluster with simulated nodes, so after
# every other bench), there one burst of BENCH_SCALE_IN_BENCH sessions with a short idle timeout;
# `make bench-scale` alone runs BENCH_SCALE_SIZES (1,000, 5,000 and 10,000), about 70 minutes on 2 cores (the 10,000 burst alone about 45: docs/benchmarks.md#bench-scale).
BENCH_SCALE_IN_BENCH ?= 1000
bench: BENCH_SCALE_SIZES = $(BENCH_SCALE_IN_BENCH)
bench: BENCH_SCALE_IDLE_SECONDS = 60
bench: bench-scale

.PHONY: cache-clean
cache-clean: ## Empty the machine's shared build cache ($PLATFORM_CACHE: compiled localkube, add-ons and tools, node_modules)
	rm -rf $(PLATFORM_CACHE)

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN{FS=":.*## "}{printf "  %-22s %s\n", $$1, $$2}'

.PHONY: build
build: node-deps ## Compile every TypeScript workspace (tsc -b)
	npx tsc -b

.PHONY: generate
generate: node-deps ## Regenerate the TS types and the chart's CRD copy from crds/*.yaml
	node crds/scripts/generate.mjs

.PHONY: verify
verify: node-deps ## Fail when generated files drifted from crds/*.yaml
	node crds/scripts/generate.mjs --check

.PHONY: lint
lint: build ## eslint, prettier and a type check of sources and tests (after tsc -b: workspaces type-check against each other's declarations)
	npx eslint .
	npx prettier --check .
	@# Two type checks at a time (2 cores; each is one single-threaded tsc); xargs fails when one does.
	printf '%s\n' crds sandbox-agent operator api-gateway egress-proxy console test-e2e test-support sdk/typescript sdk/cli \
	  | xargs -P 2 -I{} npx tsc -p {}/tsconfig.test.json

.PHONY: test-unit
test-unit: node-deps ## Unit tests of every workspace (no cluster)
	@# Two workspaces at a time: the gateway's (the longest, ~180 s) beside all the others in turn.
	@JEST="$(JEST)" test-support/scripts/run-jest-suites.sh \
	  api-gateway sandbox-agent operator crds egress-proxy console test-e2e test-support sdk/typescript sdk/cli

.PHONY: test
TEST_TIERS = verify lint test-unit test-localkube chart-lint test-images test-integration test-e2e $(if $(E2E_KUBECONFIG),,test-isolation-unenforced)
# The tiers in order, each timed (the summary line says where the time went). The last tier stops
# the local cluster instead of restarting it with its protections (make run starts it again).
test: ## Every tier: verify, lint, unit, chart checks, images, integration, e2e
	@t0=$$(date +%s); times=""; \
	for tier in $(TEST_TIERS); do \
	  s=$$(date +%s); \
	  $(MAKE) --no-print-directory $$tier ISOLATION_UNENFORCED_RESTORE=false \
	    || { echo "make test: $$tier failed after $$(( $$(date +%s) - s )) s (done:$$times)" >&2; exit 1; }; \
	  times="$$times $$tier $$(( $$(date +%s) - s )) s,"; \
	done; \
	echo "make test: all tiers passed in $$(( $$(date +%s) - t0 )) s:$${times%,}"
