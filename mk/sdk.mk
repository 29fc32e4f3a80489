# Clients people install (sdk/): the TypeScript SDK (sdk/typescript), the Python SDK (sdk/python)
# and the sbx CLI / kubectl plugin (sdk/cli). Each target builds the artefact a user gets and
# checks it from outside the repository (sdk/scripts/check-*.sh). Unit tests of the TypeScript
# packages also run in `make test-unit`; the live checks run in the e2e tier (mk/e2e.mk calls
# sdk-e2e with the platform's variables) and locally with sdk-test-local.

# The venv of the Python SDK's tools (pytest, mypy, build; pinned in sdk/python/requirements-dev.txt).
SDK_VENV := $(ROOT)/.cache/venv-sdk
SDK_VENV_STAMP := $(SDK_VENV)/.stamp
SDK_PYTHON ?= python3
export SDK_VENV

.PHONY: sdk-venv sdk-build sdk-check sdk-test-live sdk-e2e sdk-test-local

sdk-venv: $(SDK_VENV_STAMP)

$(SDK_VENV_STAMP): sdk/python/requirements-dev.txt sdk/python/pyproject.toml
	@echo "[sdk] creating $(SDK_VENV) (tools from PyPI: $$(grep -v '^#' sdk/python/requirements-dev.txt | tr '\n' ' '))"
	@$(SDK_PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "[sdk] error: $(SDK_PYTHON) is older than 3.10" >&2; exit 1; }
	@rm -rf $(SDK_VENV) && $(SDK_PYTHON) -m venv $(SDK_VENV)
	@$(SDK_VENV)/bin/pip install --quiet --disable-pip-version-check -r sdk/python/requirements-dev.txt
	@$(SDK_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e sdk/python
	@touch $@

sdk-build: node-deps ## Build the SDK artefacts: the TypeScript package (tsc, then its CommonJS half), the CLI bundle sdk/cli/dist/sbx.cjs
	npx tsc -b sdk/typescript
	node sdk/typescript/scripts/cjs.mjs
	node sdk/cli/scripts/bundle.mjs

sdk-check: node-deps sdk-venv localkube ## Build and check every SDK artefact without a gateway (npm pack + import/require + consumer compiles, wheel + clean venv + mypy + unit tests, CLI bundle + kubectl plugin list)
	@LOCALKUBE_BIN=$(LOCALKUBE_BIN) sdk/scripts/check-ts-sdk.sh
	@sdk/scripts/check-python-sdk.sh
	@LOCALKUBE_BIN=$(LOCALKUBE_BIN) sdk/scripts/check-cli.sh

# Against the gateway in E2E_GATEWAY_URL / E2E_GATEWAY_API_KEY / E2E_NAMESPACE (E2E_OTHER_NAMESPACE:
# a namespace the key may not use). Every part runs even when an earlier one fails.
sdk-test-live: node-deps sdk-venv localkube ## The SDK checks plus their live tests against $E2E_GATEWAY_URL (TS from the packed tarball, pytest sync+async, CLI e2e incl. kubectl sandbox and sbx shell in a pty)
	@test -n "$${E2E_GATEWAY_URL:-}" || { echo "sdk-test-live: E2E_GATEWAY_URL is not set (make sdk-test-local starts a local gateway)" >&2; exit 1; }
	@rc=0; \
	LOCALKUBE_BIN=$(LOCALKUBE_BIN) sdk/scripts/check-ts-sdk.sh --live || rc=1; \
	sdk/scripts/check-python-sdk.sh --live || rc=1; \
	LOCALKUBE_BIN=$(LOCALKUBE_BIN) sdk/scripts/check-cli.sh --live || rc=1; \
	exit $$rc

sdk-e2e: sdk-test-live ## The e2e tier's SDK step (called by test-e2e with the platform's variables loaded)

# The local agents run without the image's sandbox-pty helper (their terminal answers 503
# pty-unavailable): the `sbx shell` e2e is skipped there and runs against the cluster's gateway.
sdk-test-local: node-deps sdk-venv localkube ## sdk-test-live against a local gateway (control-plane localkube, real gateway and agents; no cluster needed)
	LOCALKUBE_BIN=$(LOCALKUBE_BIN) SBX_E2E_NO_TERMINAL="the local agents have no sandbox-pty helper" \
	  sdk/scripts/with-local-gateway.sh $(MAKE) --no-print-directory sdk-test-live
