package invocation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/internal/phase"
	"github.com/skillrun/skillrun/runtime"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/telemetry"
	"github.com/skillrun/skillrun/tools"
)

// Isolation choices of --isolation.
const (
	IsolationAuto      = "auto"
	IsolationContainer = "container"
	IsolationRlimit    = "rlimit"
)

// DefaultConnectTimeout is how long a skill that declared tools has to
// connect to the broker before it is recorded no_connect and stopped.
const DefaultConnectTimeout = 60 * time.Second

// MinLandlockABI is the lowest Landlock ABI the sandbox accepts without
// --allow-degraded: ABI 1 already confines the file system.
const MinLandlockABI = 1

// Options are the operator's inputs to one invocation.
type Options struct {
	SkillDir       string
	Args           []string
	Root           string        // state dir
	InvocationID   string        // empty: a new random id
	Tenant         string        // empty: "default"
	Timeout        time.Duration // overrides effort_minutes when > 0
	ConnectTimeout time.Duration // 0: DefaultConnectTimeout; < 0: never
	Strict         bool          // refuse to run with any isolation feature missing
	AllowDegraded  bool          // run below MinLandlockABI, recording the ABI used
	Isolation      string        // auto, container or rlimit
	ShimBinary     string        // the shim binary; empty: skillrun-shim beside this executable, else this executable
	UIDBase        int           // first uid of the invocation range
	UIDCount       int           // size of the range
	Host           enforce.Host  // what the host can enforce (runtime.Probe)
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
	// Telemetry exports the invocation's spans and metrics; nil exports
	// nothing.
	Telemetry *telemetry.Telemetry
	// TraceParent is the operator's W3C traceparent (exec --traceparent,
	// TRACEPARENT): the invocation's root span continues its trace, and so
	// do the audit rows and the calls without a traceparent of their own.
	// "" starts a new trace.
	TraceParent string
	// Limits are the operator's defaults (exec --max-memory …); the zero
	// value is enforce.DefaultLimits. A skill's x-max-* may lower them.
	Limits enforce.Limits
	// Approvals is what happens to a Bash command no rule covers:
	// ApprovalsDeny ("", the headless default) or ApprovalsAsk (park it for
	// an operator, up to ApprovalWait; DESIGN §8).
	Approvals    string
	ApprovalWait time.Duration
	// OnViolation is "deny" ("") or "quarantine": revoke the grants for
	// the rest of the invocation and quarantine the skill (DESIGN §9).
	OnViolation string
	// Started, if set, is called once the invocation id is known and
	// before anything runs, so the CLI can print it first.
	Started func(id string)
}

// Result is what happened.
type Result struct {
	InvocationID string
	SkillID      string
	Outcome      Outcome
	ExitCode     int
	Isolation    enforce.Isolation
	LandlockABI  int
	Duration     time.Duration
	OOMKilled    bool // the memory cgroup's OOM killer killed a process of the sandbox
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewID returns a random invocation id.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run runs one invocation. A nil error means the skill ran to its own end
// (Result.ExitCode is its own code) or was stopped by the supervisor (a
// timeout, a kill); an *Error means it did not run, with the outcome and
// exit code that say why.
func Run(ctx context.Context, opts Options) (res Result, err error) {
	opts = withDefaults(opts)
	ctx, span, tpErr := startSpan(ctx, opts)
	defer func() { endSpan(span, res, err) }()
	if tpErr != nil {
		return Result{}, fail(OutcomeInvalid, ExitSetup, "traceparent %q: %v", opts.TraceParent, tpErr)
	}
	if !idRE.MatchString(opts.InvocationID) {
		return Result{}, fail(OutcomeInvalid, ExitSetup, "--invocation-id %q: use 1-64 letters, digits, '-' or '_'", opts.InvocationID)
	}
	if err := checkPolicyOptions(opts); err != nil {
		return Result{}, err
	}
	if opts.Started != nil {
		opts.Started(opts.InvocationID)
	}
	st, err := store.Open(ctx, opts.Root)
	if err != nil {
		return Result{}, fail(OutcomeSetupFailed, ExitSetup, "state store: %v", err)
	}
	defer st.Close()
	phase.Mark("store")
	inv := &invocation{opts: opts, store: st, log: opts.Logger, started: time.Now(),
		traceID: span.SpanContext().TraceID().String(), root: span.SpanContext(), auditFlush: auditFlushTimeout}
	return inv.run(ctx)
}

// SpanInvocation is the root span of an invocation, from Run's start to
// its end: attributes invocation_id, tenant_id, then skill_id, isolation,
// outcome and exit_code. Its status is Error when the skill did not run
// (Run's error), unset when it ran, whatever its exit code.
const SpanInvocation = "skill.invocation"

// startSpan starts the invocation's root span, continuing the operator's
// traceparent when there is one. Its trace is the invocation's trace id,
// traced or not (an untraced span still has ids). An unusable traceparent
// is returned as an error after the span has started, so that failure is
// traced too.
func startSpan(ctx context.Context, o Options) (context.Context, trace.Span, error) {
	var tpErr error
	if o.TraceParent != "" {
		tp, err := broker.ParseTraceParent(o.TraceParent)
		if err == nil {
			ctx = trace.ContextWithRemoteSpanContext(ctx, tp.SpanContext())
		}
		tpErr = err
	}
	ctx, span := o.Telemetry.Tracer().Start(ctx, SpanInvocation, trace.WithAttributes(
		attribute.String("invocation_id", o.InvocationID), attribute.String("tenant_id", o.Tenant)))
	return ctx, span, tpErr
}

// endSpan records how the invocation ended on its root span and ends it.
func endSpan(span trace.Span, res Result, err error) {
	if span.IsRecording() {
		outcome, code := res.Outcome, res.ExitCode
		var ie *Error
		if errors.As(err, &ie) {
			outcome, code = ie.Outcome, ie.ExitCode
		}
		span.SetAttributes(attribute.String("outcome", string(outcome)), attribute.Int("exit_code", code))
		if res.SkillID != "" {
			span.SetAttributes(attribute.String("skill_id", res.SkillID))
		}
		if res.Isolation != "" {
			span.SetAttributes(attribute.String("isolation", string(res.Isolation)), attribute.Int("landlock_abi", res.LandlockABI))
		}
		if err != nil {
			span.SetStatus(codes.Error, string(outcome))
		}
	}
	span.End()
}

func withDefaults(o Options) Options {
	if o.InvocationID == "" {
		o.InvocationID = NewID()
	}
	if o.Tenant == "" {
		o.Tenant = "default"
	}
	if o.Approvals == "" {
		o.Approvals = ApprovalsDeny
	}
	if o.ApprovalWait <= 0 {
		o.ApprovalWait = DefaultApprovalWait
	}
	if o.OnViolation == "" {
		o.OnViolation = string(broker.OnViolationDeny)
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Isolation == "" {
		o.Isolation = IsolationAuto
	}
	if o.UIDBase == 0 {
		o.UIDBase, o.UIDCount = runtime.DefaultUIDBase, runtime.DefaultUIDCount
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	return o
}

// invocation is one run in progress.
type invocation struct {
	opts    Options
	store   *store.Store
	log     *slog.Logger
	started time.Time
	snap    *skill.Snapshot
	decl    enforce.Declaration
	plan    enforce.Plan
	undo    []func()
	begun   bool           // the invocation row exists
	runner  sandboxRunner  // the Bash tool's way into the sandbox
	brk     *broker.Broker // once started: what the skill exercised
	// traceID is the invocation's own trace, root's: its rows carry it,
	// and tool calls without a traceparent of their own continue it, as
	// children of root.
	traceID string
	root    trace.SpanContext
	// auditor queues every row once the invocation has begun (audit.go);
	// auditFlush bounds how long finish waits for it.
	auditor    *auditWriter
	auditFlush time.Duration
}

// cleanup undoes every step set up so far, newest first. It runs on every
// exit path, success or not.
func (inv *invocation) cleanup() {
	for i := len(inv.undo) - 1; i >= 0; i-- {
		inv.undo[i]()
	}
	inv.undo = nil
}

func (inv *invocation) run(ctx context.Context) (res Result, err error) {
	res = Result{InvocationID: inv.opts.InvocationID}
	defer inv.cleanup()
	defer func() {
		res.Duration = time.Since(inv.started)
		var ie *Error
		if errors.As(err, &ie) {
			res.Outcome, res.ExitCode = ie.Outcome, ie.ExitCode
		}
		// The broker stops here, so no tool-call row can follow
		// invoked_completed.
		inv.cleanup()
		phase.Mark("cleanup")
		inv.finish(&res, err)
		phase.Mark("finish")
	}()
	if err := inv.load(ctx); err != nil {
		return res, err
	}
	phase.Mark("load")
	res.SkillID = inv.snap.ID()
	isolation, err := inv.admitAndPlan(ctx)
	if err != nil {
		return res, err
	}
	phase.Mark("admit+plan")
	res.Isolation = isolation
	if err := inv.begin(ctx, isolation); err != nil {
		return res, err
	}
	phase.Mark("begin")
	return inv.execute(ctx, res)
}

// load parses SKILL.md once; this snapshot is what every check uses.
func (inv *invocation) load(ctx context.Context) error {
	snap, err := skill.Load(inv.opts.SkillDir)
	if err != nil {
		var le *skill.LoadError
		if errors.As(err, &le) {
			return fail(OutcomeInvalid, ExitSetup, "%s", le.Error())
		}
		return fail(OutcomeInvalid, ExitSetup, "load skill: %v", err)
	}
	inv.snap = snap
	return nil
}

// admitAndPlan refuses untrusted or quarantined skills, then derives and
// verifies the grant plan for the isolation this host and the operator
// allow.
func (inv *invocation) admitAndPlan(ctx context.Context) (enforce.Isolation, error) {
	s := inv.snap
	trusted, err := inv.store.Trusted(ctx, s.Hash())
	if err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "state store: %v", err)
	}
	if !trusted {
		return "", fail(OutcomeUntrusted, ExitSetup, "skill %s (content sha256:%.12s…) is not trusted; run: skillrun trust %s", s.ID(), s.Hash(), inv.opts.SkillDir)
	}
	q, reason, err := inv.store.Quarantined(ctx, s.Hash())
	if err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "state store: %v", err)
	}
	if q {
		return "", fail(OutcomeQuarantined, ExitSetup, "skill %s is quarantined (%s); run: skillrun quarantine release %s", s.ID(), reason, s.ID())
	}
	cat, err := tools.Catalog(tools.NativeSpecs())
	if err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "tools: %v", err)
	}
	decl, _, err := enforce.Declare(s.Manifest(), s.File(), cat)
	if err != nil {
		return "", fail(OutcomeInvalid, ExitSetup, "%v", err)
	}
	inv.decl = decl
	host, err := inv.isolation()
	if err != nil {
		return "", err
	}
	plan, _, err := enforce.MakePlan(s, decl, host, enforce.PlanOptions{Timeout: inv.opts.Timeout, Defaults: inv.opts.Limits})
	var ld *enforce.LoaderDefect
	if errors.As(err, &ld) {
		inv.audit(ctx, store.KindLoaderDefect, map[string]any{"grant": ld.Grant, "reason": ld.Reason})
		return "", fail(OutcomeLoaderDefect, ExitSetup, "refusing to start: %v (skillrun's fault, not the skill's)", err)
	}
	if err != nil {
		return "", fail(OutcomeInvalid, ExitSetup, "%v", err)
	}
	inv.plan = plan
	return host.Isolation, nil
}

// isolation decides the isolation level from --isolation, --strict and the
// probed host, and warns once when it is less than the full sandbox.
func (inv *invocation) isolation() (enforce.Host, error) {
	h := inv.opts.Host
	switch inv.opts.Isolation {
	case IsolationRlimit:
		h.Isolation = enforce.IsolationRlimitOnly
	case IsolationContainer:
		if h.Isolation != enforce.IsolationContainer {
			return h, fail(OutcomeSetupFailed, ExitSetup, "--isolation container: this host cannot provide it: %v", h.Problems)
		}
	case IsolationAuto:
	default:
		return h, fail(OutcomeInvalid, ExitSetup, "--isolation %q: want auto, container or rlimit", inv.opts.Isolation)
	}
	if inv.opts.Strict && (h.Isolation != enforce.IsolationContainer || len(h.Problems) > 0) {
		return h, fail(OutcomeSetupFailed, ExitSetup, "--strict: refusing to run with %s isolation: %v", h.Isolation, h.Problems)
	}
	if h.Isolation != enforce.IsolationContainer {
		fmt.Fprintf(inv.opts.Stderr, "skillrun: warning: running with %s isolation: the skill is a plain subprocess with rlimits, without namespaces, seccomp, Landlock or cgroups\n", h.Isolation)
	}
	return h, nil
}

// begin records the invocation as active, so gc can find what a killed
// supervisor leaves behind.
func (inv *invocation) begin(ctx context.Context, isolation enforce.Isolation) error {
	o := inv.opts
	err := inv.store.BeginInvocation(ctx, store.Invocation{
		ID: o.InvocationID, SkillID: inv.snap.ID(), ContentHash: inv.snap.Hash(), Tenant: o.Tenant,
		Isolation: string(isolation), SupervisorPID: os.Getpid(), SocketPath: inv.socketPath(),
		StateDir: inv.stateDir(), CgroupPath: runtime.CgroupPath(o.InvocationID), StartedAt: inv.started,
	})
	if err != nil {
		if errors.Is(err, store.ErrExists) {
			return fail(OutcomeSetupFailed, ExitSetup, "invocation %s already exists; pick another --invocation-id", o.InvocationID)
		}
		return fail(OutcomeSetupFailed, ExitSetup, "state store: %v", err)
	}
	inv.begun = true
	// From here every row goes through the queue, invoked_started first, so
	// seq keeps the order things happened in whatever the store does.
	inv.auditor = newAuditWriter(inv.store, inv.log, o.InvocationID, inv.snap.ID(), inv.traceID, 0)
	inv.auditor.start()
	inv.audit(ctx, store.KindInvokedStarted, map[string]any{
		"content_hash": inv.snap.Hash(), "tenant_id": o.Tenant, "isolation": string(isolation),
		"args_count": len(o.Args), "budget_ms": inv.plan.Budget.Milliseconds(),
	})
	return nil
}

// socketPath is the invocation's broker socket; the id was validated.
func (inv *invocation) socketPath() string {
	p, _ := broker.SocketPath(inv.opts.InvocationID)
	return p
}

func (inv *invocation) stateDir() string {
	return filepath.Join(inv.opts.Root, "run", inv.opts.InvocationID)
}

// audit records one row: through the queue once the invocation has begun,
// directly before (a loader defect). A store failure is logged, never fatal
// to the run.
func (inv *invocation) audit(ctx context.Context, kind string, payload map[string]any) {
	if inv.auditor != nil {
		inv.auditor.Record(ctx, kind, payload)
		return
	}
	inv.auditNow(ctx, kind, payload)
}

// auditNow writes one row directly; a row it cannot write is lost, and
// said so at ERROR.
func (inv *invocation) auditNow(ctx context.Context, kind string, payload map[string]any) {
	skillID := ""
	if inv.snap != nil {
		skillID = inv.snap.ID()
	}
	row := store.Row{Kind: kind, InvocationID: inv.opts.InvocationID, SkillID: skillID, TraceID: inv.traceID, Payload: mustJSON(payload)}
	if err := inv.store.Audit(context.WithoutCancel(ctx), row); err != nil {
		inv.log.Error("audit row lost", "invocation", inv.opts.InvocationID, "kind", kind, "err", err)
	}
}

// finish flushes the audit queue, then writes skill.invoked_completed —
// last, with the count of rows written and lost — and closes the
// invocation row.
func (inv *invocation) finish(res *Result, err error) {
	if !inv.begun {
		return
	}
	ctx := context.Background()
	payload := map[string]any{"outcome": string(res.Outcome), "exit_code": res.ExitCode,
		"isolation": string(res.Isolation), "landlock_abi": res.LandlockABI, "duration_ms": res.Duration.Milliseconds()}
	if res.OOMKilled {
		payload["oom_killed"] = true
	}
	if inv.brk != nil {
		payload["exercised"] = inv.brk.Exercised()
	}
	if err != nil {
		payload["error"] = err.Error()
	}
	if inv.auditor != nil {
		fctx, cancel := context.WithTimeout(ctx, inv.auditFlush)
		inv.auditor.Close(fctx)
		cancel()
		payload["audit_rows_written"], payload["audit_rows_lost"] = inv.auditor.Written(), inv.auditor.Lost()
	}
	inv.auditNow(ctx, store.KindInvokedCompleted, payload)
	if ferr := inv.store.FinishInvocation(ctx, inv.opts.InvocationID, string(res.Outcome), res.ExitCode); ferr != nil {
		inv.log.Warn("finish invocation", "err", ferr)
	}
}

// checkEntrypoint maps a missing or non-executable entrypoint to 127/126
// before any sandbox is built, naming the path.
func checkEntrypoint(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fail(OutcomeNotFound, ExitNotFound, "entrypoint %s not found", path)
	case err != nil:
		return fail(OutcomeNotExecutable, ExitNotExecutable, "entrypoint %s: %v", path, err)
	case !info.Mode().IsRegular():
		return fail(OutcomeNotExecutable, ExitNotExecutable, "entrypoint %s is not a regular file", path)
	case info.Mode().Perm()&0o111 == 0:
		return fail(OutcomeNotExecutable, ExitNotExecutable, "entrypoint %s is not executable (chmod +x it)", path)
	}
	return nil
}
