package broker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/telemetry"
	"github.com/skillrun/skillrun/tools"
)

// Span and metric names (DESIGN §10). Every call that names a tool gets
// one SpanToolCall span, a child of the skill's traceparent when it sent a
// valid one, else of the invocation's root span; a dispatched call's tool
// runs in a child span named by ToolSpanName. A tool.call whose params do
// not decode names no tool and gets neither span nor metric, as it gets no
// audit row.
//
//	skill.broker.tool_call  skill_id, tool_name, outcome, duration_ms,
//	                        args_size_bytes, result_size_bytes,
//	                        invocation_id, tenant_id, call_id; reason when
//	                        denied; error.type on error and timeout
//	skill.tool.<tool>.exec  tool_name; error.type when the tool failed
//
// duration_ms, like the duration histogram, is the whole call inside the
// broker, checks included; the completed audit row's duration_ms is the
// tool's run only. Status is Error for outcomes error and timeout, unset
// otherwise: a denial is the policy working, not skillrun failing.
//
// Metrics, each with skill_id and tool_name (a tool served here or named
// in SKILL.md, else "other": a skill's calls must not mint label values):
//
//	tool_calls_total              counter, outcome (success|denied|error|timeout)
//	tool_call.duration            histogram, seconds, outcome
//	tool_calls_denied_total       counter, reason
//	tool_calls_timeout_total      counter
//	tool_results_truncated_total  counter: results cut at the 16 MiB response cap
const (
	SpanToolCall               = "skill.broker.tool_call"
	MetricToolCalls            = "tool_calls_total"
	MetricToolCallDuration     = "tool_call.duration"
	MetricToolCallsDenied      = "tool_calls_denied_total"
	MetricToolCallsTimeout     = "tool_calls_timeout_total"
	MetricToolResultsTruncated = "tool_results_truncated_total"
)

// ToolSpanName names the span of a tool's run: skill.tool.bash.exec.
func ToolSpanName(tool string) string { return "skill.tool." + strings.ToLower(tool) + ".exec" }

// The span kinds, built once: an option is an allocation per call.
var (
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// flagsHex is f as traceparent's trace-flags, without an allocation for
// the two values in use.
func flagsHex(f trace.TraceFlags) string {
	switch f {
	case 0:
		return "00"
	case trace.FlagsSampled:
		return "01"
	}
	return f.String()
}

// otherTool is the tool_name metric label of a name no tool here has.
const otherTool = "other"

// maxToolNameAttr caps the skill-supplied tool name on a span: a call may
// name a tool with up to 1 MiB, and every span is queued and exported.
const maxToolNameAttr = 128

// durationBuckets (seconds) span a Read of a few microseconds to a Bash
// command at its 10-minute limit.
var durationBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// instruments are the broker's metrics; nil when metrics are off, so no
// attribute is built for nobody.
type instruments struct {
	calls, denied, timeouts, truncated metric.Int64Counter
	duration                           metric.Float64Histogram
}

func newInstruments(tel *telemetry.Telemetry) (*instruments, error) {
	if !tel.MetricsEnabled() {
		return nil, nil
	}
	m := tel.Meter()
	var ins instruments
	var errs [5]error
	ins.calls, errs[0] = m.Int64Counter(MetricToolCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls by outcome: success, denied, error or timeout."))
	ins.duration, errs[1] = m.Float64Histogram(MetricToolCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call inside the broker, checks included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ins.denied, errs[2] = m.Int64Counter(MetricToolCallsDenied, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls denied by the policy, by reason."))
	ins.timeouts, errs[3] = m.Int64Counter(MetricToolCallsTimeout, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls that ran out of time."))
	ins.truncated, errs[4] = m.Int64Counter(MetricToolResultsTruncated, metric.WithUnit("{result}"),
		metric.WithDescription("Tool results truncated to fit the response cap."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &ins, nil
}

// toolMeta is what the broker precomputes per known tool, so a call's
// telemetry costs no string building.
type toolMeta struct {
	spanName string
	label    attribute.KeyValue // tool_name for metrics
	truncOpt metric.AddOption   // tool_results_truncated_total's attributes
	ins      *instruments
}

func (b *Broker) initTelemetry(cfg Config) error {
	ins, err := newInstruments(cfg.Telemetry)
	if err != nil {
		return err
	}
	b.tracer, b.ins = cfg.Telemetry.Tracer(), ins
	b.skillAttr = attribute.String("skill_id", b.skillID)
	b.other = &toolMeta{spanName: ToolSpanName(otherTool), label: attribute.String("tool_name", otherTool)}
	b.tools = map[string]*toolMeta{}
	// Label values are the tools served here and the names SKILL.md
	// declares: both fixed before the skill's first call.
	d := cfg.Enforcer.Declaration()
	names := slices.Concat(d.Tools, d.Disallowed, d.Foreign)
	for _, s := range cfg.Registry.Specs() {
		names = append(names, s.Name)
	}
	for _, name := range names {
		label := attribute.String("tool_name", name)
		b.tools[name] = &toolMeta{spanName: ToolSpanName(name), label: label, ins: ins,
			truncOpt: metric.WithAttributeSet(attribute.NewSet(label, b.skillAttr))}
	}
	return nil
}

// meta returns a tool's precomputed telemetry, or other's for a name no
// tool here has.
func (b *Broker) meta(tool string) *toolMeta {
	if m, ok := b.tools[tool]; ok {
		return m
	}
	return b.other
}

// startCall starts the call's span and takes the call's ids from it: its
// trace id is the rows' trace_id, its span id their call_id. It also sets
// the traceparent the tool propagates: the skill's own, verbatim, when it
// sent a valid one — so the service it reaches sees exactly the
// traceparent the skill put on the call (seed criterion 18) — else the
// call's. An invalid one does not fail the call (a tracing bug in a skill
// is no reason to refuse its work); it is logged and ignored.
func (b *Broker) startCall(ctx context.Context, c *call, sent string) context.Context {
	parent := b.parent
	if sent != "" {
		if tp, err := ParseTraceParent(sent); err == nil {
			// The skill's sampled flag is not obeyed: whether the calls of
			// untrusted code are recorded is the operator's choice, made for
			// the invocation's root span, not the skill's.
			parent = tp.SpanContext().WithTraceFlags(b.parent.TraceFlags())
			c.propagate = sent
		} else {
			b.log.Debug("broker: ignoring traceparent", "tool", c.tool, "error", err)
		}
	}
	ctx, c.span = b.tracer.Start(trace.ContextWithSpanContext(ctx, parent), SpanToolCall, serverKind)
	sc := c.span.SpanContext()
	c.trace = TraceParent{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Flags: flagsHex(sc.TraceFlags())}
	if c.propagate == "" {
		c.propagate = c.trace.String()
	}
	return ctx
}

// endCall ends the call's span and counts the call. It is deferred, so it
// runs however the call ends.
func (b *Broker) endCall(ctx context.Context, c *call) {
	if c.outcome == "" {
		// The broker itself panicked on this call (the jsonrpc server
		// answers it); still a call that failed.
		c.outcome, c.err = OutcomeError, &panicError{value: "broker"}
	}
	dur := time.Since(c.start)
	reason := failureType(c.err)
	if b.ins != nil {
		b.measure(ctx, c, dur, reason)
	}
	if c.span.IsRecording() {
		name := c.tool
		if len(name) > maxToolNameAttr {
			name = name[:maxToolNameAttr]
		}
		c.span.SetAttributes(b.skillAttr, attribute.String("tool_name", name), attribute.String("outcome", c.outcome),
			attribute.Int64("duration_ms", dur.Milliseconds()), attribute.Int("args_size_bytes", len(c.args)),
			attribute.Int("result_size_bytes", c.resultSize), attribute.String("invocation_id", b.cfg.InvocationID),
			attribute.String("tenant_id", b.cfg.TenantID), attribute.String("call_id", c.trace.SpanID))
		switch c.outcome {
		case OutcomeDenied:
			c.span.SetAttributes(attribute.String("reason", reason))
		case OutcomeError, OutcomeTimeout:
			c.span.SetAttributes(attribute.String("error.type", reason))
			c.span.SetStatus(codes.Error, reason)
		}
	}
	c.span.End()
}

func (b *Broker) measure(ctx context.Context, c *call, dur time.Duration, reason string) {
	m := b.meta(c.tool)
	set := metric.WithAttributeSet(attribute.NewSet(b.skillAttr, m.label, attribute.String("outcome", c.outcome)))
	b.ins.calls.Add(ctx, 1, set)
	b.ins.duration.Record(ctx, dur.Seconds(), set)
	switch c.outcome {
	case OutcomeDenied:
		b.ins.denied.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(b.skillAttr, m.label, attribute.String("reason", reason))))
	case OutcomeTimeout:
		b.ins.timeouts.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(b.skillAttr, m.label)))
	}
}

// runTool runs the tool in a span of its own, which ends however the tool
// does: invoke turns a panic into an error, and End is deferred anyway.
func (b *Broker) runTool(ctx context.Context, m *toolMeta, t tools.Tool, tc tools.Call) (res any, err error) {
	ctx, span := b.tracer.Start(ctx, m.spanName, internalKind)
	defer span.End()
	res, err = invoke(ctx, t, tc)
	if span.IsRecording() {
		span.SetAttributes(m.label)
		if _, denied := enforce.AsDenial(err); err != nil && !denied {
			t := failureType(err)
			span.SetAttributes(attribute.String("error.type", t))
			span.SetStatus(codes.Error, t)
		}
	}
	return res, err
}

// failureType is the one word a span or metric gets for why a call did
// not succeed: the denial reason, the tool's failure reason, or a class.
// Never the error text: it may hold host state.
func failureType(err error) string {
	if err == nil {
		return ""
	}
	if d, ok := enforce.AsDenial(err); ok {
		return string(d.Reason)
	}
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		return "panic"
	case errors.Is(err, jsonrpc.ErrInvalidParams):
		return "invalid_params"
	}
	if te := newToolError("", "", err); te != nil {
		return te.Reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "internal"
}

// SpanContext is tp as the remote parent of a span. tp must come from
// ParseTraceParent; anything else gives an invalid span context.
func (tp TraceParent) SpanContext() trace.SpanContext {
	tid, _ := trace.TraceIDFromHex(tp.TraceID)
	sid, _ := trace.SpanIDFromHex(tp.SpanID)
	var flags [1]byte
	_, _ = hex.Decode(flags[:], []byte(tp.Flags))
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true})
}

// truncated counts a result the jsonrpc server shrank to fit the response
// cap (it logs the WARN; this is the metric of the seed's failure table).
func (m *toolMeta) truncated() {
	if m != nil && m.ins != nil {
		m.ins.truncated.Add(context.Background(), 1, m.truncOpt)
	}
}
