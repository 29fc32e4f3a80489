# Persistent workspaces and suspend/resume (issue 13): the resume benchmark on the local cluster.
# The e2e spec (test-e2e/specs/suspend/) runs with the rest of the e2e tier.

# Samples of each kind (cold create, resume), alternating.
BENCH_RESUME_ARGS ?= --sessions 20
.PHONY: bench-resume bench
bench-resume: node-deps platform-up ## Resume-to-first-output vs cold create-to-first-output through the in-cluster gateway (p50/p99, ratio)
	@set -a; . $(PLATFORM_ENV); set +a; KUBECONFIG="$${KUBECONFIG:-$(LOCALKUBE_DIR)/kubeconfig}" nice node test-e2e/bench/resume-run.mjs $(BENCH_RESUME_ARGS)
bench: bench-resume
