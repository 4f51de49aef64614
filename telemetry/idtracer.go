package telemetry

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// idTracerProvider is the tracer provider of traces turned off. Its spans
// record nothing and export nothing, but, unlike the OpenTelemetry no-op
// tracer's, each has ids of its own: the broker's call_id is a call's span
// id and an audit row's trace_id its trace id, with or without tracing, so
// the broker asks the same question of either provider.
type idTracerProvider struct{ embedded.TracerProvider }

func (idTracerProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return idTracer{} }

type idTracer struct{ embedded.Tracer }

// Start continues the trace of the span in ctx, with its flags, or starts
// a new, sampled one (the sampled flag tells downstream services that this
// call is recorded: its audit rows are).
func (idTracer) Start(ctx context.Context, _ string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanContextFromContext(ctx)
	if len(opts) > 0 {
		if c := trace.NewSpanStartConfig(opts...); c.NewRoot() {
			parent = trace.SpanContext{}
		}
	}
	cfg := trace.SpanContextConfig{
		TraceID:    parent.TraceID(),
		SpanID:     newSpanID(),
		TraceFlags: parent.TraceFlags(),
		TraceState: parent.TraceState(),
	}
	if !cfg.TraceID.IsValid() {
		cfg.TraceID, cfg.TraceFlags = newTraceID(), trace.FlagsSampled
	}
	// The API's own non-recording span carries exactly a span context.
	ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(cfg))
	return ctx, trace.SpanFromContext(ctx)
}

// newTraceID and newSpanID are random and never all zero (invalid in W3C
// Trace Context). crypto/rand.Read does not fail (it panics rather).
func newTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}

func newSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}
