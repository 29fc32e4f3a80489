# sandbox-agent: unit tests and the exec round-trip benchmark. Owned by the agent area.
BENCH_ITERATIONS ?= 1000

.PHONY: test-agent bench-agent bench
test-agent: node-deps ## Unit tests of the sandbox agent (real bash, ephemeral ports)
	cd sandbox-agent && $(JEST)

bench-agent: node-deps ## Agent exec round trip of `true` vs spawning `bash -c true` (BENCH_ITERATIONS each)
	node sandbox-agent/bench/run.mjs --iterations $(BENCH_ITERATIONS)

# Other areas may add their benchmarks as further prerequisites of `bench`.
bench: bench-agent ## Every benchmark
