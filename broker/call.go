package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/tools"
)

// call is one tool.call as it goes through the broker.
type call struct {
	tool     string
	args     json.RawMessage // as the skill sent them
	argsHash string
	start    time.Time
	// span is the call's skill.broker.tool_call span; trace is its trace
	// and span id, which is also the call's call_id in its audit rows.
	span  trace.Span
	trace TraceParent
	// propagate is the traceparent the tool sends on (see startCall).
	propagate string
	// outcome, err and resultSize are how the call ended, for its span
	// and metrics; outcome is "" until then.
	outcome    string
	err        error
	resultSize int
}

// toolCall runs one tool.call in the order of DESIGN §6: tool allow/deny,
// argument checks, rate limit, dispatch.
func (b *Broker) toolCall(ctx context.Context, params json.RawMessage) (any, error) {
	b.calls.Add(1)
	var p jsonrpc.ToolCallParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		b.failed.Add(1)
		return nil, err
	}
	if p.Tool == "" {
		b.failed.Add(1)
		return nil, &jsonrpc.ParamsError{Field: "tool", Detail: "required"}
	}
	c := &call{tool: p.Tool, args: p.Args, argsHash: ArgsHash(p.Args), start: time.Now()}
	ctx = b.startCall(ctx, c, p.Traceparent)
	defer b.endCall(ctx, c)
	t, args, err := b.check(ctx, c)
	if err != nil {
		return nil, b.refuse(ctx, c, err)
	}
	return b.dispatch(ctx, c, t, args)
}

// check runs every check before dispatch and returns the tool and the
// arguments it is to be invoked with.
func (b *Broker) check(ctx context.Context, c *call) (tools.Tool, json.RawMessage, error) {
	enf := b.cfg.Enforcer
	if err := b.revokedDenial(c.tool); err != nil {
		return nil, nil, err
	}
	if err := enf.CheckTool(c.tool); err != nil {
		return nil, nil, err
	}
	t, ok := b.cfg.Registry.Tool(c.tool)
	if !ok {
		// Allowed by the declaration but not served here (a catalog
		// entry with no implementation, an MCP server not running).
		return nil, nil, enforce.Deny(enforce.ReasonUnknownTool, c.tool, "not provided by this broker")
	}
	p, ok := t.(Preparer)
	if !ok {
		// New made sure such a tool exercises no capability.
		return t, c.args, b.checkRate(c.tool)
	}
	args, err := prepare(p, c.args, enf)
	if d, ok := enforce.AsDenial(err); ok {
		// A Bash command no rule covers may be parked for an operator
		// (--approvals=ask); approved, it runs as checked so far.
		if err := b.approve(ctx, c.tool, c.args, d); err != nil {
			return nil, nil, err
		}
		args, err = c.args, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := b.checkRate(c.tool); err != nil {
		return nil, nil, err
	}
	return t, args, nil
}

// prepare runs a tool's argument check; a panic in it refuses the call
// rather than ending the broker.
func prepare(p Preparer, args json.RawMessage, e *enforce.Enforcer) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return p.Prepare(args, e)
}

// refuse accounts for a call stopped before dispatch and returns the
// error for the skill.
func (b *Broker) refuse(ctx context.Context, c *call, err error) error {
	if d, ok := enforce.AsDenial(err); ok {
		b.deny(ctx, c, d)
		b.onViolation(ctx, d)
		c.outcome, c.err = OutcomeDenied, d
		return d
	}
	b.failed.Add(1)
	c.outcome, c.err = OutcomeError, err
	if errors.Is(err, jsonrpc.ErrInvalidParams) {
		b.log.Debug("broker: invalid tool arguments", "tool", c.tool, "args_hash", c.argsHash, "error", err)
		return err
	}
	b.logFailure(c, err)
	return fmt.Errorf("%s: argument check failed: %w", c.tool, jsonrpc.ErrInternal)
}

// deny records a denial. It fills in the tool and skill a tool's own
// denial may lack, as the skill is told them.
func (b *Broker) deny(ctx context.Context, c *call, d *enforce.Denial) {
	b.denied.Add(1)
	if d.Tool == "" {
		d.Tool = c.tool
	}
	if d.SkillID == "" {
		d.SkillID = b.skillID
	}
	// The detail may quote arguments: it goes to the skill and the log,
	// never into the audit row.
	b.log.Info("broker: tool call denied", "tool", c.tool, "reason", d.Reason, "args_hash", c.argsHash)
	b.record(ctx, KindToolDenied, c, &deniedRow{AttemptedArgsHash: c.argsHash, Reason: string(d.Reason)})
}

// dispatch invokes the tool with the checked arguments. The started row is
// recorded before the tool runs, so a call that never returns still left
// its trace (DESIGN §7).
func (b *Broker) dispatch(ctx context.Context, c *call, t tools.Tool, args json.RawMessage) (any, error) {
	b.record(ctx, KindToolCallStarted, c, &startedRow{ArgsHash: c.argsHash})
	m := b.meta(c.tool)
	start := time.Now()
	res, err := b.runTool(ctx, m, t, tools.Call{Args: args, TraceParent: c.propagate, TraceID: c.trace.TraceID})
	dur := time.Since(start)
	var out any
	size := 0
	if err == nil {
		out, size, err = marshalResult(res, m)
	}
	c.err, c.resultSize = err, size
	outcome, err := b.outcome(ctx, c, err)
	c.outcome = outcome
	if outcome == OutcomeSuccess {
		b.exercise(c.tool)
	}
	b.record(ctx, KindToolCallCompleted, c, &completedRow{
		ArgsHash:        c.argsHash,
		Outcome:         outcome,
		DurationMS:      dur.Milliseconds(),
		ArgsSizeBytes:   len(c.args),
		ResultSizeBytes: size,
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// marshalResult marshals a tool's result once, to measure it for the
// completed row, and returns it in a form the jsonrpc server sends without
// marshalling it again (jsonrpc.Encoded). A result that can truncate
// itself still can: the server needs that past the response cap.
// The size is the tool's whole result, before any truncation.
func marshalResult(res any, m *toolMeta) (any, int, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, 0, fmt.Errorf("marshal result: %w", err)
	}
	t, _ := res.(jsonrpc.Truncatable)
	return &rawResult{raw: raw, t: t, meta: m}, len(raw), nil
}

// rawResult is a result marshalled already. It is always Truncatable, so
// that the server tells the broker of every result it cuts to the cap:
// one that cannot shrink (t is nil) gives the server a value that fails
// to marshal, and the server sends its too-large placeholder as it would
// have anyway.
type rawResult struct {
	raw  json.RawMessage
	t    jsonrpc.Truncatable
	meta *toolMeta
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// EncodedJSON makes rawResult a jsonrpc.Encoded: raw is json.Marshal's.
func (r *rawResult) EncodedJSON() []byte { return r.raw }

func (r *rawResult) Truncate(max int) any {
	r.meta.truncated()
	if r.t == nil {
		return unfit{}
	}
	return r.t.Truncate(max)
}

// unfit is what a result that cannot shrink offers in its place.
type unfit struct{}

var errUnfit = errors.New("result cannot be truncated")

func (unfit) MarshalJSON() ([]byte, error) { return nil, errUnfit }

// invoke runs the tool; a panic in it fails this call, not the broker,
// and is still accounted for like any failure.
func invoke(ctx context.Context, t tools.Tool, c tools.Call) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return t.Invoke(ctx, c)
}

// outcome classifies a tool's error and turns it into what the skill gets.
func (b *Broker) outcome(ctx context.Context, c *call, err error) (string, error) {
	if err == nil {
		return OutcomeSuccess, nil
	}
	if d, ok := enforce.AsDenial(err); ok {
		// A denial at use time: a check the tool itself made on opening
		// (a symlink swapped in after Prepare checked the path).
		b.deny(ctx, c, d)
		return OutcomeDenied, d
	}
	b.failed.Add(1)
	outcome := OutcomeError
	if errors.Is(err, context.DeadlineExceeded) {
		outcome = OutcomeTimeout
	}
	if errors.Is(err, jsonrpc.ErrInvalidParams) {
		return outcome, err
	}
	// A failure the tool classified (tools.Failure: timeout, not_found…)
	// reaches the skill as a tool_error with its reason, timeouts included.
	if te := newToolError(c.tool, b.skillID, err); te != nil {
		b.log.Debug("broker: tool failed", "tool", c.tool, "reason", te.Reason, "error", err)
		return outcome, te.wire()
	}
	if outcome == OutcomeTimeout {
		b.logFailure(c, err)
		return outcome, fmt.Errorf("%s: timed out: %w", c.tool, jsonrpc.ErrInternal)
	}
	b.logFailure(c, err)
	// The text may name host state: it stays in the log.
	return OutcomeError, fmt.Errorf("%s: %w", c.tool, jsonrpc.ErrInternal)
}

func (b *Broker) logFailure(c *call, err error) {
	var pe *panicError
	if errors.As(err, &pe) {
		b.log.Error("broker: tool panicked", "tool", c.tool, "panic", pe.value, "stack", string(pe.stack))
		return
	}
	b.log.Warn("broker: tool failed", "tool", c.tool, "args_hash", c.argsHash, "error", err)
}

// record writes one audit row with the fields every row of a call has.
// call_id is the same on every row of one call, which is how a replay
// pairs started with completed exactly; it is the call's span id, so a
// downstream service that logs the traceparent it got can be matched too.
func (b *Broker) record(ctx context.Context, kind string, c *call, row auditRow) {
	row.setCall(callFields{
		InvocationID: b.cfg.InvocationID,
		SkillID:      b.skillID,
		TenantID:     b.cfg.TenantID,
		ToolName:     c.tool,
		TraceID:      c.trace.TraceID,
		CallID:       c.trace.SpanID,
	})
	if b.rawAudit != nil {
		// The rows hold strings and integers only: they always encode.
		if payload, err := json.Marshal(row); err == nil {
			b.rawAudit.RecordJSON(ctx, kind, c.trace.TraceID, payload)
			return
		}
	}
	b.audit.Record(ctx, kind, row.fields())
}

// panicError is a tool's panic turned into an error.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("tool panicked: %v", e.value) }
