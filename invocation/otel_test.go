package invocation_test

import (
	"errors"
	"io"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skillrun/skillrun/invocation"
	"github.com/skillrun/skillrun/telemetry"
)

// TestInvocationSpan checks the root span of an invocation that did not
// run: it continues the operator's trace, says why, and is an error.
func TestInvocationSpan(t *testing.T) {
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name, traceparent string
		wantTrace         string // "" means a new one
		wantOutcome       invocation.Outcome
	}{
		{"continues the operator's trace", "00-" + trace + "-" + parent + "-01", trace, invocation.OutcomeInvalid},
		{"no traceparent: a new trace", "", "", invocation.OutcomeInvalid},
		{"a bad traceparent is refused, and traced", "00-" + trace + "-" + parent, "", invocation.OutcomeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			tel := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)), nil)
			_, err := invocation.Run(t.Context(), invocation.Options{
				SkillDir: t.TempDir() + "/missing", Root: t.TempDir(), InvocationID: "inv-otel",
				Telemetry: tel, TraceParent: tt.traceparent, Stderr: io.Discard,
			})
			var ie *invocation.Error
			if !errors.As(err, &ie) || ie.Outcome != tt.wantOutcome {
				t.Fatalf("Run: %v, want outcome %s", err, tt.wantOutcome)
			}
			got := spans.GetSpans()
			if len(got) != 1 || got[0].Name != invocation.SpanInvocation {
				t.Fatalf("spans %v, want one %s", got, invocation.SpanInvocation)
			}
			s := got[0]
			if tt.wantTrace != "" && (s.SpanContext.TraceID().String() != tt.wantTrace || s.Parent.SpanID().String() != parent) {
				t.Errorf("trace %s parent %s, want %s %s", s.SpanContext.TraceID(), s.Parent.SpanID(), tt.wantTrace, parent)
			}
			if tt.wantTrace == "" && (s.Parent.IsValid() || s.SpanContext.TraceID().String() == trace) {
				t.Errorf("parent %v trace %s: want a new trace", s.Parent, s.SpanContext.TraceID())
			}
			a := map[string]any{}
			for _, kv := range s.Attributes {
				a[string(kv.Key)] = kv.Value.AsInterface()
			}
			want := map[string]any{"invocation_id": "inv-otel", "tenant_id": "default", "outcome": string(tt.wantOutcome), "exit_code": int64(invocation.ExitSetup)}
			for k, w := range want {
				if a[k] != w {
					t.Errorf("attribute %s = %v, want %v", k, a[k], w)
				}
			}
			if s.Status.Code != codes.Error {
				t.Errorf("status %v, want Error: the skill did not run", s.Status)
			}
		})
	}
}
