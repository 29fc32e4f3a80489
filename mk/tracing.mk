# Traces (issue 17, docs/observability.md "Traces"): the real OTLP receiver of the e2e tracing spec
# and the benchmark of what tracing costs a gateway exec.
.PHONY: otel-receiver

OTEL_RECEIVER_BUILD := test-e2e/localkube/addons/otel-receiver/build.sh

otel-receiver: ## Build the e2e OTLP receiver (the OpenTelemetry Collector's otlpreceiver, spans to a file; hash-cached)
	$(OTEL_RECEIVER_BUILD) >/dev/null

# test-e2e/specs/observability runs it: built before the specs (cached, so instant when unchanged).
test-e2e: otel-receiver
