package telemetry

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newTracerProvider batches spans to each exporter of s: a tool call is
// never held up by a collector.
func newTracerProvider(ctx context.Context, s Signal, res *resource.Resource, stderr io.Writer) (*sdktrace.TracerProvider, error) {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, kind := range s.Exporters {
		exp, err := spanExporter(ctx, kind, s, stderr)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s trace exporter: %w", kind, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

func spanExporter(ctx context.Context, kind Exporter, s Signal, stderr io.Writer) (sdktrace.SpanExporter, error) {
	switch {
	case kind == ExporterConsole:
		return stdouttrace.New(stdouttrace.WithWriter(stderr))
	case s.Protocol == ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if s.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.Endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	default:
		var opts []otlptracehttp.Option
		if s.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(s.Endpoint))
		}
		return otlptracehttp.New(ctx, opts...)
	}
}

// newMeterProvider reads metrics periodically into each exporter of s;
// Shutdown collects and exports one last time, so a short invocation's
// counts are not lost.
func newMeterProvider(ctx context.Context, s Signal, res *resource.Resource, stderr io.Writer) (*sdkmetric.MeterProvider, error) {
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	for _, kind := range s.Exporters {
		exp, err := metricExporter(ctx, kind, s, stderr)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s metric exporter: %w", kind, err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

func metricExporter(ctx context.Context, kind Exporter, s Signal, stderr io.Writer) (sdkmetric.Exporter, error) {
	switch {
	case kind == ExporterConsole:
		return stdoutmetric.New(stdoutmetric.WithWriter(stderr))
	case s.Protocol == ProtocolGRPC:
		var opts []otlpmetricgrpc.Option
		if s.Endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(s.Endpoint))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	default:
		var opts []otlpmetrichttp.Option
		if s.Endpoint != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(s.Endpoint))
		}
		return otlpmetrichttp.New(ctx, opts...)
	}
}
