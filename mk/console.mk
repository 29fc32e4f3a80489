# The web console (issue 31, docs/adr/0032-web-console-and-previews.md): its files are built with
# the gateway image (mk/images.mk); its e2e is test-e2e/specs/console (part of make test-e2e).

.PHONY: bench-console

bench-console: node-deps platform-up ## The console's first load in headless Chromium (bytes of HTML/JS/CSS, time to interactive) vs a /healthz load, side by side
	@set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/console.bench.mjs $(BENCH_CONSOLE_ARGS)

# `make bench` runs it with the others.
bench: bench-console
