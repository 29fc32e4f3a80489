# The gateway's interactive routes (issue 15: background processes, terminal, port route); their
# benchmark against direct calls. Local (no cluster): the real gateway code and agent on loopback,
# each in its own process (a deployment's topology), beside floors of one extra process in the path.
.PHONY: bench-gateway-interactive
# Sequential samples per latency mode, warm-up calls, interleaved rounds, sizes (the streamed file is
# cat'ed in execs of --piece-mib, at most the gateway's output cap) and transfers per mode. Add
# --baseline <commit> for that commit's gateway beside this tree's, --cpu-prof <dir> for profiles
# of the gateway's and the floors' processes, --parts stream,download,latency for a subset,
# --stream-content text to stream ASCII text lines (JSON escapes) instead of random bytes (base64).
BENCH_GATEWAY_INTERACTIVE_ARGS ?= --iterations 1000 --warmup 100 --rounds 5 --stream-mib 100 --piece-mib 16 --download-mib 100 --transfers 5

bench-gateway-interactive: node-deps ## Exec-stream (cat 100 MiB) and port-route (download 100 MiB) throughput vs direct and floors, port-route p50 vs the exec overhead
	nice node api-gateway/bench/interactive-run.mjs $(BENCH_GATEWAY_INTERACTIVE_ARGS)

bench: bench-gateway-interactive
