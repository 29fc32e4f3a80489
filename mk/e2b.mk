# The E2B-compatible API (issue 28, docs/e2b.md, docs/adr/0035-e2b-compatible-api.md): the envd
# services' generated code, the official Python SDK's venv for the e2e spec, and `make bench-e2b`.
# The e2e specs (test-e2e/specs/e2b/, JS and Python SDKs) run with the others in `make test-e2e`.

E2B_PROTO := api-gateway/src/e2b/proto/generate.sh

.PHONY: e2b-generate e2b-verify e2b-venv test-e2b bench-e2b

e2b-generate: node-deps ## Regenerate api-gateway/src/e2b/gen (envd services) from the .proto files with buf + protoc-gen-es
	@$(E2B_PROTO)

e2b-verify: node-deps ## Fail when api-gateway/src/e2b/gen drifted from the .proto files
	@$(E2B_PROTO) --check

generate: e2b-generate
verify: e2b-verify

e2b-venv: ## .cache/venv-e2b: the pinned official Python e2b SDK (test-e2e/specs/e2b/python/requirements.txt; cached by its hash)
	@test-e2e/specs/e2b/python/venv.sh >/dev/null

test-e2b: node-deps e2b-venv ## Only the e2b e2e specs (JS and Python SDKs) against the installed platform (make platform-up first)
	@set -a; . $(PLATFORM_ENV); set +a; cd test-e2e && $(JEST) -c jest.e2e.config.js --runInBand specs/e2b

bench-e2b: node-deps sdk-ts-build platform-up ## commands.run('true') through the JS e2b SDK vs the TS SDK's exec on the same session (goal p50 <= 1.2x); figures in docs/benchmarks.md
	@set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/e2b-run.mjs $(BENCH_E2B_ARGS)

bench: bench-e2b
