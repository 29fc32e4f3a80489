# Integration and e2e tiers (docs/architecture.md, "Test tiers"; harness in test-support/).

# E2E_KUBECONFIG: run the e2e specs against this cluster instead of starting the local one.
E2E_KUBECONFIG ?=

.PHONY: test-integration
test-integration: node-deps localkube tools ## Integration tests of every workspace with a jest.integration.config.js (each against its own control plane)
	@# Two workspaces at a time, each with its own control plane on free ports; the two slowest first.
	@JEST="$(JEST)" test-support/scripts/run-jest-suites.sh --config jest.integration.config.js \
	  api-gateway operator $$(for c in */jest.integration.config.js; do d=$${c%/*}; \
	    case $$d in api-gateway|operator) ;; *) echo $$d;; esac; done)

.PHONY: test-e2e
test-e2e: node-deps ## e2e: local cluster + the chart installed (platform-up), the specs, the release artefacts installed with helm test, helm upgrade/uninstall checks, cluster lifecycle checks
ifeq ($(E2E_KUBECONFIG),)
	$(MAKE) platform-up
	@# Every part runs even when an earlier one fails, so one report shows every failure; the
	@# last line says where the time went.
	@rc=0; times=""; \
	step() { local s=$$(date +%s) r=0; "$${@:2}" || { r=1; rc=1; }; times="$$times $$1 $$(( $$(date +%s) - s )) s$$([ $$r = 0 ] || echo ' FAILED'),"; }; \
	step specs sh -c 'set -a; . $(PLATFORM_ENV); set +a; cd test-e2e && $(JEST) -c jest.e2e.config.js --runInBand'; \
	step sdk-e2e sh -c 'set -a; . $(PLATFORM_ENV); set +a; $(MAKE) --no-print-directory sdk-e2e'; \
	step release-install $(MAKE) --no-print-directory release-install; \
	step helm-lifecycle test-e2e/specs/platform/helm-lifecycle.sh; \
	step cluster-lifecycle test-e2e/specs/cluster/cluster-lifecycle.sh; \
	echo "test-e2e:$${times%,}"; \
	exit $$rc
else
	@# Any cluster: install the chart there first (make platform-up E2E_KUBECONFIG=...), or export
	@# E2E_GATEWAY_URL / E2E_GATEWAY_API_KEY / E2E_OTHER_API_KEY for an existing installation.
	@if [ -f $(PLATFORM_ENV) ] && [ -z "$$E2E_GATEWAY_URL" ]; then set -a; . $(PLATFORM_ENV); set +a; fi; \
	cd test-e2e && E2E_KUBECONFIG=$(E2E_KUBECONFIG) $(JEST) -c jest.e2e.config.js --runInBand
endif

.PHONY: test-cluster-lifecycle
test-cluster-lifecycle: ## Restart/reset/bad-input checks of the local cluster (restarts it; part of test-e2e)
	test-e2e/specs/cluster/cluster-lifecycle.sh
