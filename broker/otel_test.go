package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/telemetry"
	"github.com/skillrun/skillrun/tools"
)

// hangingRunner is a sandbox whose commands run until their deadline: the
// real Bash tool, given timeout_ms, times out against it.
type hangingRunner struct{}

func (hangingRunner) RunCommand(ctx context.Context, _ []string, _, _ io.Writer) (int, error) {
	<-ctx.Done()
	return -1, ctx.Err()
}

// traced is a broker with telemetry to memory: every span ends up in spans
// as it ends, metrics are read on demand.
type traced struct {
	client  *jsonrpc.Client
	audit   *recorder
	spans   *tracetest.InMemoryExporter
	metrics *sdkmetric.ManualReader
	root    trace.SpanContext // the invocation's root span, the parent of calls without a traceparent
}

// startTraced serves a skill allowed Echo, Boom and Bash (any command),
// with telemetry on.
func startTraced(t testing.TB) *traced {
	t.Helper()
	f := &traced{audit: &recorder{}, spans: tracetest.NewInMemoryExporter(), metrics: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(f.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.metrics))
	tel := telemetry.New(tp, mp)
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	_, root := tel.Tracer().Start(context.Background(), "skill.invocation")
	t.Cleanup(func() { root.End() })
	f.root = root.SpanContext()
	fm := "---\nname: t\ndescription: d\nallowed-tools: Echo, Boom, Bash, Write\n---\n"
	snap, e := compile(t, fm, echo{}.Spec())
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: registry(t, echo{}, boom{}, tools.NewBash(hangingRunner{})),
		InvocationID: "inv-1", Audit: f.audit, Parent: f.root, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	sock := t.TempDir() + "/b.sock"
	l, err := broker.Listen(sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, l)
	f.client = dial(t, sock)
	return f
}

// named returns the ended spans called name.
func (f *traced) named(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range f.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s tracetest.SpanStub) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// TestToolCallSpan checks seed criterion 22: one skill.broker.tool_call
// span per call, with its attributes, in the skill's trace under the
// skill's span, a child span for the tool's run, and the audit rows' ids
// equal to the span's.
func TestToolCallSpan(t *testing.T) {
	f := startTraced(t)
	args := map[string]string{"pad": "abc"}
	var got echoResult
	if err := f.client.CallTool(t.Context(), "Echo", args, w3cTP, &got); err != nil {
		t.Fatal(err)
	}
	calls := f.named(broker.SpanToolCall)
	if len(calls) != 1 {
		t.Fatalf("%d tool_call spans, want 1", len(calls))
	}
	s := calls[0]
	if s.SpanContext.TraceID().String() != w3cTrace || s.Parent.SpanID().String() != w3cSpan || !s.Parent.IsRemote() {
		t.Errorf("span trace %s parent %s (remote %v); want the skill's %s/%s", s.SpanContext.TraceID(), s.Parent.SpanID(), s.Parent.IsRemote(), w3cTrace, w3cSpan)
	}
	if s.SpanKind != trace.SpanKindServer || s.Status.Code != codes.Unset {
		t.Errorf("kind %v status %v", s.SpanKind, s.Status)
	}
	a := attrs(s)
	argsJSON, _ := json.Marshal(args)
	want := map[string]any{"skill_id": "t", "tool_name": "Echo", "outcome": "success", "args_size_bytes": int64(len(argsJSON)),
		"invocation_id": "inv-1", "tenant_id": "default", "call_id": s.SpanContext.SpanID().String()}
	for k, w := range want {
		if a[k].AsInterface() != w {
			t.Errorf("attribute %s = %v, want %v", k, a[k].AsInterface(), w)
		}
	}
	if _, ok := a["duration_ms"]; !ok || a["result_size_bytes"].AsInt64() == 0 {
		t.Errorf("duration_ms %v result_size_bytes %v", a["duration_ms"], a["result_size_bytes"])
	}
	tool := f.named("skill.tool.echo.exec")
	if len(tool) != 1 || tool[0].Parent.SpanID() != s.SpanContext.SpanID() || tool[0].SpanContext.TraceID() != s.SpanContext.TraceID() {
		t.Fatalf("tool spans %+v, want one child of the call", tool)
	}
	for _, r := range f.audit.take() {
		if r.payload["call_id"] != s.SpanContext.SpanID().String() || r.payload["trace_id"] != w3cTrace {
			t.Errorf("%s row: call_id %v trace_id %v; want the span's %s %s", r.kind, r.payload["call_id"], r.payload["trace_id"], s.SpanContext.SpanID(), w3cTrace)
		}
	}
	// The tool propagates the skill's traceparent verbatim (criterion 18).
	if got.TraceParent != w3cTP {
		t.Errorf("tool got %s, want %s", got.TraceParent, w3cTP)
	}
}

// TestToolCallSpanParents checks which span a call hangs from, and that a
// skill cannot switch tracing off for its calls with an unsampled flag.
func TestToolCallSpanParents(t *testing.T) {
	f := startTraced(t)
	unsampled := "00-" + w3cTrace + "-" + w3cSpan + "-00"
	tests := []struct {
		name, sent          string
		wantTrace, wantPrnt string
		wantPropagated      string // "" means the call's own traceparent
	}{
		{"the skill's span", w3cTP, w3cTrace, w3cSpan, w3cTP},
		{"unsampled by the skill, recorded all the same", unsampled, w3cTrace, w3cSpan, unsampled},
		{"none: the invocation's root span", "", f.root.TraceID().String(), f.root.SpanID().String(), ""},
		{"invalid: the invocation's root span", "00-xyz", f.root.TraceID().String(), f.root.SpanID().String(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.spans.Reset()
			var got echoResult
			if err := f.client.CallTool(t.Context(), "Echo", nil, tt.sent, &got); err != nil {
				t.Fatal(err)
			}
			calls := f.named(broker.SpanToolCall)
			if len(calls) != 1 {
				t.Fatalf("%d tool_call spans, want 1", len(calls))
			}
			sc := calls[0].SpanContext
			if sc.TraceID().String() != tt.wantTrace || calls[0].Parent.SpanID().String() != tt.wantPrnt || !sc.IsSampled() {
				t.Errorf("trace %s parent %s sampled %v; want %s %s sampled", sc.TraceID(), calls[0].Parent.SpanID(), sc.IsSampled(), tt.wantTrace, tt.wantPrnt)
			}
			want := tt.wantPropagated
			if want == "" {
				want = "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
			}
			if got.TraceParent != want {
				t.Errorf("tool propagates %s, want %s", got.TraceParent, want)
			}
		})
	}
}

// TestDeniedAndFailedSpans checks the spans of calls that do not succeed:
// a denial has its reason and no error status and never reaches a tool; a
// panicking tool still ends its span, as an error.
func TestDeniedAndFailedSpans(t *testing.T) {
	f := startTraced(t)
	if err := f.client.CallTool(t.Context(), "Grep", map[string]string{"pattern": "x"}, "", nil); err == nil {
		t.Fatal("Grep was not denied")
	}
	if err := f.client.CallTool(t.Context(), "Boom", nil, "", nil); !errors.Is(err, jsonrpc.ErrInternal) {
		t.Fatalf("Boom: %v", err)
	}
	calls := f.named(broker.SpanToolCall)
	if len(calls) != 2 {
		t.Fatalf("%d tool_call spans, want 2", len(calls))
	}
	denied, boom := attrs(calls[0]), attrs(calls[1])
	if denied["outcome"].AsString() != "denied" || denied["reason"].AsString() != "tool_not_in_allowed_tools" || calls[0].Status.Code != codes.Unset {
		t.Errorf("denied span: %v, status %v", denied, calls[0].Status)
	}
	if boom["outcome"].AsString() != "error" || boom["error.type"].AsString() != "panic" || calls[1].Status.Code != codes.Error {
		t.Errorf("panicking tool's call span: %v, status %v", boom, calls[1].Status)
	}
	tool := f.named("skill.tool.boom.exec")
	if len(tool) != 1 || tool[0].Status.Code != codes.Error || tool[0].Parent.SpanID() != calls[1].SpanContext.SpanID() {
		t.Fatalf("Boom's tool spans: %+v", tool)
	}
	if n := len(f.named("skill.tool.grep.exec")); n != 0 {
		t.Errorf("a denied call ran its tool: %d spans", n)
	}
}

// TestToolCallMetrics checks seed criterion 23: a fixture run of N
// successes, M denials and one timeout (the real Bash tool past its
// timeout_ms) gives exactly those counts.
func TestToolCallMetrics(t *testing.T) {
	f := startTraced(t)
	const successes = 5
	for range successes {
		if err := f.client.CallTool(t.Context(), "Echo", nil, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	denials := []struct{ tool, reason string }{
		{"Grep", "tool_not_in_allowed_tools"}, {"Grep", "tool_not_in_allowed_tools"},
		{"Write", "unknown_tool"}, {"NoSuchTool", "tool_not_in_allowed_tools"},
	}
	for _, d := range denials {
		if err := f.client.CallTool(t.Context(), d.tool, map[string]string{}, "", nil); err == nil {
			t.Fatalf("%s was not denied", d.tool)
		}
	}
	err := f.client.CallTool(t.Context(), "Bash", map[string]any{"command": "sleep 5", "timeout_ms": 20}, "", nil)
	if te, ok := broker.AsToolError(err); !ok || te.Reason != "timeout" {
		t.Fatalf("Bash past timeout_ms: %v", err)
	}
	m := collect(t, f.metrics)
	for _, c := range []struct {
		metric string
		where  map[string]string
		want   int64
	}{
		{broker.MetricToolCalls, map[string]string{"outcome": "success"}, successes},
		{broker.MetricToolCalls, map[string]string{"outcome": "denied"}, int64(len(denials))},
		{broker.MetricToolCalls, map[string]string{"outcome": "timeout"}, 1},
		{broker.MetricToolCalls, map[string]string{"outcome": "error"}, 0},
		{broker.MetricToolCalls, map[string]string{"tool_name": "other"}, 3}, // Grep, NoSuchTool: neither served nor declared
		{broker.MetricToolCallsDenied, map[string]string{"reason": "tool_not_in_allowed_tools"}, 3},
		{broker.MetricToolCallsDenied, map[string]string{"reason": "unknown_tool", "tool_name": "Write"}, 1},
		{broker.MetricToolCallsTimeout, map[string]string{"tool_name": "Bash", "skill_id": "t"}, 1},
	} {
		if got := sum(t, m, c.metric, c.where); got != c.want {
			t.Errorf("%s%v = %d, want %d", c.metric, c.where, got, c.want)
		}
	}
	if got := histogramCount(t, m, broker.MetricToolCallDuration); got != successes+uint64(len(denials))+1 {
		t.Errorf("%s count = %d, want %d", broker.MetricToolCallDuration, got, successes+len(denials)+1)
	}
	if n := len(f.named("skill.tool.bash.exec")); n != 1 {
		t.Errorf("%d bash exec spans, want 1", n)
	}
}

// big is a test tool whose result is over the 16 MiB response cap: a
// Truncatable one or, with "plain", one that cannot shrink.
type big struct{}

type bigResult struct {
	Body string `json:"body"`
}

type shrinkable struct{ bigResult }

func (s *shrinkable) Truncate(int) any { return bigResult{Body: "cut"} }

func (big) Spec() tools.Spec {
	return tools.Spec{Name: "Big", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (big) Invoke(_ context.Context, c tools.Call) (any, error) {
	r := bigResult{Body: strings.Repeat("x", jsonrpc.DefaultMaxResponse+1)}
	if strings.Contains(string(c.Args), "plain") {
		return r, nil
	}
	return &shrinkable{r}, nil
}

// TestTruncatedMetric counts results cut to the response cap, whether the
// result shrank itself or was replaced by the placeholder.
func TestTruncatedMetric(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel := telemetry.New(nil, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	snap, e := compile(t, "---\nname: t\ndescription: d\nallowed-tools: Big\n---\n", big{}.Spec())
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: registry(t, big{}), InvocationID: "inv-1", Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	sock := t.TempDir() + "/b.sock"
	l, err := broker.Listen(sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, l)
	client := dial(t, sock)
	var cut bigResult
	if err := client.CallTool(t.Context(), "Big", nil, "", &cut); err != nil || cut.Body != "cut" {
		t.Fatalf("shrinkable: %q, %v", cut.Body, err)
	}
	var placeholder struct {
		Truncated bool   `json:"truncated"`
		Error     string `json:"error"`
	}
	if err := client.CallTool(t.Context(), "Big", map[string]bool{"plain": true}, "", &placeholder); err != nil || !placeholder.Truncated || placeholder.Error != "response_too_large" {
		t.Fatalf("plain: %+v, %v", placeholder, err)
	}
	if got := sum(t, collect(t, reader), broker.MetricToolResultsTruncated, map[string]string{"tool_name": "Big"}); got != 2 {
		t.Fatalf("%s = %d, want 2", broker.MetricToolResultsTruncated, got)
	}
}

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != telemetry.Scope {
			t.Errorf("scope %q, want %q", sm.Scope.Name, telemetry.Scope)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum adds up the points of an int64 counter whose attributes include
// where.
func sum(t *testing.T, m map[string]metricdata.Metrics, name string, where map[string]string) int64 {
	t.Helper()
	data, ok := m[name].Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: %T, want an int64 sum", name, m[name].Data)
	}
	var n int64
	for _, p := range data.DataPoints {
		if matches(p.Attributes, where) {
			n += p.Value
		}
	}
	return n
}

func histogramCount(t *testing.T, m map[string]metricdata.Metrics, name string) uint64 {
	t.Helper()
	data, ok := m[name].Data.(metricdata.Histogram[float64])
	if !ok || m[name].Unit != "s" {
		t.Fatalf("%s: %T unit %q, want a float64 histogram in s", name, m[name].Data, m[name].Unit)
	}
	var n uint64
	for _, p := range data.DataPoints {
		n += p.Count
	}
	return n
}

func matches(set attribute.Set, where map[string]string) bool {
	for k, v := range where {
		if got, ok := set.Value(attribute.Key(k)); !ok || got.AsString() != v {
			return false
		}
	}
	return true
}

// BenchmarkToolCallReadTraced is BenchmarkToolCallRead with spans to an
// in-memory exporter and metrics to a manual reader: the cost of telemetry
// on, against the same benchmark with it off.
func BenchmarkToolCallReadTraced(b *testing.B) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel := telemetry.New(tp, mp)
	defer tel.Shutdown(context.Background())
	f := startWith(b, tel)
	p := f.write(b, "small.txt", "a small file of a few bytes\n")
	args := map[string]string{"path": p}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var got tools.ReadResult
		if err := f.client.CallTool(b.Context(), "Read", args, "", &got); err != nil {
			b.Fatal(err)
		}
		// Spans kept forever would make this a benchmark of the GC.
		if n++; n%4096 == 0 {
			spans.Reset()
		}
	}
	b.StopTimer()
	if err := tp.ForceFlush(context.Background()); err != nil || len(spans.GetSpans()) == 0 {
		b.Fatalf("no spans exported: %v", err)
	}
}
