# Traces (issue 17, docs/observability.md "Traces"): the real OTLP receiver of the e2e tracing spec
# and the benchmark of what tracing costs a gateway exec.
.PHONY: otel-receiver

OTEL_RECEIVER_BUILD := test-e2e/localkube/addons/otel-receiver/build.sh

otel-receiver: ## Build the e2e OTLP receiver (the OpenTelemetry Collector's otlpreceiver, spans to a file; hash-cached)
	$(OTEL_RECEIVER_BUILD) >/dev/null

# test-e2e/specs/observability runs it: built before the specs (cached, so instant when unchanged).
test-e2e: otel-receiver

.PHONY: bench-gateway-tracing
# Sequential execs per mode, interleaved rounds, and the req/s phase of the tracing benchmark.
BENCH_GATEWAY_TRACING_ARGS ?= --iterations 2000 --warmup 200 --rounds 8 --concurrency 8 --duration-ms 8000

bench-gateway-tracing: node-deps ## What tracing costs a gateway exec: off vs on (100%, OTLP to a loopback sink) vs on (0%), and a minimal fastify + @fastify/otel floor off vs on, real agent on loopback, same run
	nice node api-gateway/bench/tracing-run.mjs $(BENCH_GATEWAY_TRACING_ARGS)

bench: bench-gateway-tracing
