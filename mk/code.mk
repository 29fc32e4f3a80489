# The code interpreter and file watching (issue 29, docs/adr/0033-code-interpreter.md): the Python
# stack its kernels run on (test-e2e/images/python/requirements.txt, wheels from PyPI cached in
# .cache/python-stack), the sandbox-python image's inputs, and `make bench-code`.

PYTHON_STACK := test-e2e/images/scripts/python-stack.sh

.PHONY: code-venv python-stack-site bench-code

code-venv: ## The agent unit tests' Python kernel: a venv in .cache/python-stack with the pinned stack (cached)
	@$(PYTHON_STACK) venv

python-stack-site: ## /opt/sandbox-python/lib, the pinned stack the sandbox-python image copies (cached)
	@$(PYTHON_STACK) site

# The agent's unit tests start real kernels.
test-agent test-unit: code-venv

bench-code: node-deps platform-up ## run_code("1+1") on a warm kernel vs exec true through the in-cluster gateway, and the first run of a new session (kernel start); figures in docs/benchmarks.md
	set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/code.bench.mjs $(BENCH_CODE_ARGS)

bench: bench-code
