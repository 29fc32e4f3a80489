# sandbox-agent: unit tests and its benchmarks (exec round trip, stream throughput). Owned by the
# agent area.
BENCH_ITERATIONS ?= 1000
BENCH_STREAM_ROUNDS ?= 3

.PHONY: test-agent bench-agent bench
test-agent: node-deps ## Unit tests of the sandbox agent (real bash, ephemeral ports)
	cd sandbox-agent && $(JEST)

bench-agent: node-deps ## Agent exec round trip vs spawning bash (BENCH_ITERATIONS); stream of cat of 100 MiB vs direct fs->socket (BENCH_STREAM_ROUNDS)
	node sandbox-agent/bench/run.mjs exec-roundtrip --iterations $(BENCH_ITERATIONS)
	node sandbox-agent/bench/run.mjs stream-throughput --rounds $(BENCH_STREAM_ROUNDS)

# Other areas may add their benchmarks as further prerequisites of `bench`.
bench: bench-agent ## Every benchmark
