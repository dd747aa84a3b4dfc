package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrUnsupportedExporter: OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_PROTOCOL
// names something FromEnv cannot build.
var ErrUnsupportedExporter = errors.New("unsupported trace exporter")

// FromEnv returns a tracer provider configured by the standard OTEL_*
// environment variables, and the function that flushes and stops it (call
// it before the process exits), or a nil provider and a no-op shutdown
// when the environment asks for no traces. It sets no global state:
// pass the provider to manager.Options.TracerProvider, and to
// otel.SetTracerProvider yourself if other libraries should use it too.
//
// Traces are on when OTEL_TRACES_EXPORTER is "otlp", or when it is unset
// and OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set; OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn them
// off. The exporter is OTLP over HTTP/protobuf (the protocol must be
// unset or "http/protobuf"), configured by the OTEL_EXPORTER_OTLP_*
// variables (endpoint, headers, timeout, TLS); the resource by
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the sampler by
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on);
// batching by OTEL_BSP_*.
func FromEnv(ctx context.Context) (trace.TracerProvider, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	on, err := enabled()
	if err != nil || !on {
		return nil, noop, err
	}
	exp, err := newExporter()
	if err != nil {
		return nil, noop, fmt.Errorf("build OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, noop, fmt.Errorf("build trace resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	res, err = resource.Merge(resource.Default(), res)
	if err != nil {
		return nil, noop, fmt.Errorf("merge trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// enabled reports whether the environment asks for traces.
func enabled() (bool, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return false, fmt.Errorf("%s=%q: %w: opkit exports OTLP over HTTP; set it to \"http/protobuf\" or unset it", v, p, ErrUnsupportedExporter)
		}
	}
	switch exp := os.Getenv("OTEL_TRACES_EXPORTER"); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: %w: use \"otlp\" or \"none\"", exp, ErrUnsupportedExporter)
	}
}
