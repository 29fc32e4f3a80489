# The gateway's interactive routes (issue 15: background processes, terminal, port route); their
# benchmark against direct calls. Local (no cluster): the real gateway code and agent on loopback.
.PHONY: bench-gateway-interactive
# Sequential samples per latency mode, warm-up calls, interleaved rounds, sizes and transfers.
BENCH_GATEWAY_INTERACTIVE_ARGS ?= --iterations 1000 --warmup 100 --rounds 5 --stream-mib 16 --download-mib 100 --transfers 5

bench-gateway-interactive: node-deps ## Exec-stream and port-route throughput (cat 16 MiB, download 100 MiB) and port-route p50 vs direct, next to the exec overhead
	nice node api-gateway/bench/interactive-run.mjs $(BENCH_GATEWAY_INTERACTIVE_ARGS)

bench: bench-gateway-interactive
