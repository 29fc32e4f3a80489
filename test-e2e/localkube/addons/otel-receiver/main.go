// Command otel-receiver is the OpenTelemetry Collector's own OTLP receiver
// (go.opentelemetry.io/collector/receiver/otlpreceiver), serving OTLP/HTTP only (protobuf and
// JSON, as the collector does), with a consumer that appends every trace export it accepted to a
// file as one line of OTLP JSON (ptrace.JSONMarshaler). The e2e tracing spec
// (test-e2e/specs/observability) runs it on the node's bridge address, points the gateway at it
// and reads the file: a real receiver, not a mock, without a whole collector distribution.
//
//	usage: otel-receiver --endpoint 198.18.0.1:4318 --out /tmp/spans.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:4318", "host:port of the OTLP/HTTP listener")
	out := flag.String("out", "", "file the trace exports are appended to, one OTLP JSON line each (default: stdout)")
	flag.Parse()
	if err := run(*endpoint, *out); err != nil {
		fmt.Fprintf(os.Stderr, "otel-receiver: %v\n", err)
		os.Exit(1)
	}
}

func run(endpoint, out string) error {
	w := os.Stdout
	if out != "" {
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	var mu sync.Mutex
	marshaler := &ptrace.JSONMarshaler{}
	next, err := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		line, err := marshaler.MarshalTraces(td)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_, err = w.Write(append(line, '\n'))
		return err
	})
	if err != nil {
		return err
	}

	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	http := cfg.Protocols.HTTP.GetOrInsertDefault()
	http.ServerConfig.NetAddr.Endpoint = endpoint
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rcv, err := factory.CreateTraces(ctx, receivertest.NewNopSettings(factory.Type()), cfg, next)
	if err != nil {
		return err
	}
	// Start binds the listener: once the line below is printed, exports are accepted.
	if err := rcv.Start(ctx, componenttest.NewNopHost()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "otel-receiver listening on %s\n", endpoint)
	<-ctx.Done()
	return rcv.Shutdown(context.Background())
}
