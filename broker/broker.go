package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/telemetry"
	"github.com/skillrun/skillrun/tools"
)

// Config is what one invocation's broker serves.
type Config struct {
	// Snapshot is the skill as parsed once at invocation start.
	Snapshot *skill.Snapshot
	// Enforcer is the policy compiled from Snapshot.
	Enforcer *enforce.Enforcer
	// Registry holds the tools that can be dispatched to.
	Registry *tools.Registry
	// InvocationID names the invocation in status and audit rows; it
	// must be a valid socket name part (ValidateInvocationID).
	InvocationID string
	// TenantID partitions memory; "" means "default" (DESIGN §7).
	TenantID string
	// Logger gets denials, failures and panics; nil discards them.
	Logger *slog.Logger
	// Audit gets the audit rows; nil records nothing.
	Audit Auditor
	// TraceID is the invocation's own trace (32 lowercase hex digits),
	// which tool calls without a valid traceparent continue; "" means
	// Parent's, or a new random one (see Broker.TraceID).
	TraceID string
	// Parent is the invocation's root span: tool calls without a valid
	// traceparent of their own are its children, and its trace flags
	// decide whether calls are sampled. Invalid (the zero value) means a
	// made-up parent in TraceID, sampled.
	Parent trace.SpanContext
	// Telemetry exports the calls' spans and metrics; nil exports nothing
	// (calls still get span ids: they are their call_ids).
	Telemetry *telemetry.Telemetry
	// OnViolation is what a skill fault does (DESIGN §9); "" is deny.
	OnViolation ViolationPolicy
	// Quarantine records the skill as quarantined under OnViolationQuarantine.
	Quarantine QuarantineFunc
	// Approver decides Bash commands no rule covers; nil denies them (the
	// headless default, DESIGN §8).
	Approver Approver
}

// Preparer is implemented by every tool whose arguments carry the scope of
// a capability. Prepare checks args with e before dispatch and returns the
// arguments the tool is then invoked with, rewritten to exactly what was
// checked (a file tool puts the real path in place of the one asked for).
// A refusal is an *enforce.Denial; unusable arguments wrap
// jsonrpc.ErrInvalidParams.
type Preparer interface {
	Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error)
}

// Broker answers one invocation's JSON-RPC calls. It is safe for
// concurrent use by many connections.
type Broker struct {
	cfg      Config
	log      *slog.Logger
	audit    Auditor
	rawAudit RawAuditor // audit, when it takes encoded payloads
	skillID  string
	traceID  string
	started  time.Time
	list     ToolList
	// listResult is list, encoded once: it never changes.
	listResult *rawResult
	limiter    *rate.Limiter // x-rate-limit; nil: unbounded
	revoked    atomic.Bool   // grants revoked after a violation (OnViolationQuarantine)
	ledger     ledger        // capabilities exercised

	// Telemetry (otel.go): the parent of calls without a traceparent, and
	// what is precomputed per tool.
	parent    trace.SpanContext
	tracer    trace.Tracer
	ins       *instruments
	skillAttr attribute.KeyValue
	tools     map[string]*toolMeta
	other     *toolMeta

	calls, denied, failed, conns atomic.Int64
	firstConnect                 atomic.Pointer[time.Time]
	connected                    chan struct{}
	connectOnce                  sync.Once
}

// Stats are the broker's counters.
type Stats struct {
	Calls       int64 // tool.call requests
	Denied      int64 // of which denied by the policy
	Errors      int64 // of which failed otherwise: bad params, tool failures
	Connections int64 // connections accepted
	// FirstConnect is when the first client connected; zero until then.
	FirstConnect time.Time
}

// ToolInfo is one tool as tool.list describes it (as MCP does).
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ToolList is tool.list's result.
type ToolList struct {
	Tools []ToolInfo `json:"tools"`
}

// Status is broker.status's result.
type Status struct {
	InvocationID string `json:"invocation_id"`
	SkillID      string `json:"skill_id"`
	ToolCalls    int64  `json:"tool_calls"`
	Denied       int64  `json:"denied"`
	UptimeMS     int64  `json:"uptime_ms"`
	// Exercised lists the capabilities the skill actually used, as
	// kind:tool (DESIGN §9); Revoked says its grants were revoked.
	Exercised []string `json:"exercised"`
	Revoked   bool     `json:"revoked,omitempty"`
}

// New checks cfg and builds the broker. Every registered tool that
// exercises a capability must implement Preparer (ErrUncheckedTool): a
// scoped tool without an argument check would run unchecked.
func New(cfg Config) (*Broker, error) {
	switch {
	case cfg.Snapshot == nil, cfg.Enforcer == nil, cfg.Registry == nil:
		return nil, fmt.Errorf("broker: %w: Snapshot, Enforcer and Registry are required", ErrConfig)
	case cfg.Enforcer.SkillID() != cfg.Snapshot.ID():
		return nil, fmt.Errorf("broker: %w: enforcer is for skill %q, snapshot is %q", ErrConfig, cfg.Enforcer.SkillID(), cfg.Snapshot.ID())
	}
	if err := ValidateInvocationID(cfg.InvocationID); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if cfg.TenantID == "" {
		cfg.TenantID = "default"
	}
	parent, err := rootSpan(cfg)
	if err != nil {
		return nil, err
	}
	cfg.TraceID = parent.TraceID().String()
	b := &Broker{
		cfg:       cfg,
		log:       cfg.Logger,
		audit:     cfg.Audit,
		skillID:   cfg.Snapshot.ID(),
		traceID:   cfg.TraceID,
		started:   time.Now(),
		connected: make(chan struct{}),
		limiter:   newRateLimiter(cfg.Enforcer.Declaration().RateLimit),
		parent:    parent,
	}
	if err := b.initTelemetry(cfg); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.audit == nil {
		b.audit = NopAuditor{}
	}
	b.rawAudit, _ = b.audit.(RawAuditor)
	b.list.Tools = []ToolInfo{}
	for _, s := range cfg.Registry.Specs() {
		t, ok := cfg.Registry.Tool(s.Name)
		if !ok {
			continue // a description only: nothing to dispatch to
		}
		if _, checked := t.(Preparer); !checked && len(s.Capabilities) > 0 {
			return nil, fmt.Errorf("broker: %w: %s (%v)", ErrUncheckedTool, s.Name, s.Capabilities)
		}
		// The Enforcer never changes, so what the skill may call is
		// known now.
		if cfg.Enforcer.CheckTool(s.Name) == nil {
			b.list.Tools = append(b.list.Tools, ToolInfo{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema})
		}
	}
	raw, err := json.Marshal(&b.list)
	if err != nil {
		return nil, fmt.Errorf("broker: %w: tool list: %w", ErrConfig, err)
	}
	// Not truncatable, as the list itself is not: past the response cap
	// the server sends its placeholder.
	b.listResult = &rawResult{raw: raw}
	return b, nil
}

// rootSpan is the parent of calls without a traceparent: Config.Parent,
// or, without one, a made-up span in Config.TraceID (or a new trace) that
// stands for the invocation, so its calls share one trace.
func rootSpan(cfg Config) (trace.SpanContext, error) {
	if cfg.Parent.IsValid() {
		if cfg.TraceID != "" && cfg.TraceID != cfg.Parent.TraceID().String() {
			return trace.SpanContext{}, fmt.Errorf("broker: %w: TraceID %s is not Parent's trace %s", ErrConfig, cfg.TraceID, cfg.Parent.TraceID())
		}
		return cfg.Parent, nil
	}
	switch {
	case cfg.TraceID == "":
		cfg.TraceID = NewTraceID()
	case !ValidTraceID(cfg.TraceID):
		return trace.SpanContext{}, fmt.Errorf("broker: %w: TraceID %q is not 32 lowercase hex digits, not all zero", ErrConfig, cfg.TraceID)
	}
	tid, _ := trace.TraceIDFromHex(cfg.TraceID)
	sid, _ := trace.SpanIDFromHex(newSpanID())
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}), nil
}

// Handler is the broker as a jsonrpc.Handler.
func (b *Broker) Handler() jsonrpc.Handler { return jsonrpc.HandlerFunc(b.handle) }

// Serve serves connections on l, several at once, until ctx is cancelled
// (then it returns nil) or accepting fails for good. Serve owns l: on
// return l is closed and its socket file removed if it is still the one
// Listen created.
func (b *Broker) Serve(ctx context.Context, l *Listener) error {
	srv := &jsonrpc.Server{Handler: b.Handler(), SkillID: b.skillID, Logger: b.log}
	err := srv.Serve(ctx, &countingListener{Listener: l, b: b})
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return err
}

// TraceID is the invocation's own trace id: Config.TraceID or the one New
// made up.
func (b *Broker) TraceID() string { return b.traceID }

// Connected is closed when the first client connects. The supervisor uses
// it to tell a skill that never connected (skill.no_connect).
func (b *Broker) Connected() <-chan struct{} { return b.connected }

// Stats returns the counters.
func (b *Broker) Stats() Stats {
	s := Stats{
		Calls:       b.calls.Load(),
		Denied:      b.denied.Load(),
		Errors:      b.failed.Load(),
		Connections: b.conns.Load(),
	}
	if t := b.firstConnect.Load(); t != nil {
		s.FirstConnect = *t
	}
	return s
}

func (b *Broker) noteConnect() {
	b.conns.Add(1)
	b.connectOnce.Do(func() {
		now := time.Now()
		b.firstConnect.Store(&now)
		close(b.connected)
	})
}

// countingListener counts accepted connections for Stats and Connected.
type countingListener struct {
	*Listener
	b *Broker
}

func (c *countingListener) Accept() (net.Conn, error) {
	conn, err := c.Listener.Accept()
	if err == nil {
		c.b.noteConnect()
	}
	return conn, err
}

func (b *Broker) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case jsonrpc.MethodToolCall:
		return b.toolCall(ctx, params)
	case jsonrpc.MethodToolList:
		if err := noParams(params); err != nil {
			return nil, err
		}
		return b.listResult, nil
	case jsonrpc.MethodBrokerStatus:
		if err := noParams(params); err != nil {
			return nil, err
		}
		return b.status(), nil
	}
	return nil, jsonrpc.ErrMethodNotFound
}

// noParams accepts absent params or {}: anything else is a client bug
// worth telling about.
func noParams(params json.RawMessage) error {
	if emptyObject(params) {
		return nil // what DecodeParams says of {}, without a decoder
	}
	var none struct{}
	return jsonrpc.DecodeParams(params, &none)
}

// emptyObject reports whether params is {}, with or without JSON
// whitespace.
func emptyObject(params json.RawMessage) bool {
	s := bytes.Trim(params, jsonSpace)
	return len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' && len(bytes.Trim(s[1:len(s)-1], jsonSpace)) == 0
}

const jsonSpace = " \t\r\n"

func (b *Broker) status() *Status {
	return &Status{
		InvocationID: b.cfg.InvocationID,
		SkillID:      b.skillID,
		ToolCalls:    b.calls.Load(),
		Denied:       b.denied.Load(),
		UptimeMS:     time.Since(b.started).Milliseconds(),
		Exercised:    b.ledger.list(),
		Revoked:      b.revoked.Load(),
	}
}

// Exercised lists the capabilities the skill actually used, kind:tool.
func (b *Broker) Exercised() []string { return b.ledger.list() }
