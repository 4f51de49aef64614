package invocation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/internal/phase"
	"github.com/skillrun/skillrun/runtime"
	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/tools"
)

// execute starts the broker and the sandbox and supervises the skill.
func (inv *invocation) execute(ctx context.Context, res Result) (Result, error) {
	o := inv.opts
	if err := checkEntrypoint(filepath.Join(inv.snap.Dir(), inv.snap.Manifest().Entrypoint)); err != nil {
		return res, err
	}
	lease, err := runtime.LeaseUID(runtime.UIDLeaseDir(o.Root), o.UIDBase, o.UIDCount)
	if err != nil {
		return res, fail(OutcomeSetupFailed, ExitSetup, "%v", err)
	}
	inv.undo = append(inv.undo, func() { _ = lease.Release() })
	b, err := inv.startBroker(ctx, lease.UID)
	if err != nil {
		return res, err
	}
	inv.brk = b
	phase.Mark("broker")
	source, err := inv.materialize(lease.UID)
	if err != nil {
		return res, err
	}
	phase.Mark("materialize")
	sb, err := inv.startSandbox(lease.UID, source)
	if err != nil {
		return res, err
	}
	res.LandlockABI = sb.LandlockABI()
	inv.runner.bind(sb)
	if err := inv.store.SetSandbox(ctx, o.InvocationID, store.Sandbox{Isolation: string(sb.Isolation()),
		ContainerID: o.InvocationID, CgroupPath: runtime.CgroupPath(o.InvocationID), LandlockABI: sb.LandlockABI()}); err != nil {
		inv.log.Warn("record sandbox", "err", err)
	}
	return inv.supervise(ctx, sb, b, res)
}

// startBroker listens on the invocation's socket and serves it until the
// invocation ends. The socket belongs to the invocation's uid, mode 0600.
func (inv *invocation) startBroker(ctx context.Context, uid int) (*broker.Broker, error) {
	o := inv.opts
	// The policy is compiled against every native tool first: Glob, Grep
	// and MemorySearch filter their results through it.
	cat, err := tools.Catalog(tools.NativeSpecs())
	if err != nil {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "tools: %v", err)
	}
	enf, _, err := enforce.Compile(inv.snap, cat)
	if err != nil {
		return nil, fail(OutcomeInvalid, ExitSetup, "%v", err)
	}
	native := []tools.Tool{tools.NewRead(), tools.NewWrite(), tools.NewEdit(), tools.NewGlob(enf), tools.NewGrep(enf),
		tools.NewBash(&inv.runner), tools.NewHTTPFetch(), tools.NewHTTPPost()}
	native = append(native, tools.MemoryTools(inv.store, o.Tenant, o.InvocationID, enf)...)
	reg, err := tools.NewRegistry(native...)
	if err != nil {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "tools: %v", err)
	}
	b, err := broker.New(broker.Config{Snapshot: inv.snap, Enforcer: enf, Registry: reg,
		InvocationID: o.InvocationID, TenantID: o.Tenant, Logger: inv.log,
		Audit: inv.auditor, TraceID: inv.traceID, Parent: inv.root, Telemetry: o.Telemetry,
		OnViolation: broker.ViolationPolicy(o.OnViolation), Quarantine: inv.quarantine, Approver: inv.approver()})
	if err != nil {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "broker: %v", err)
	}
	owner := broker.KeepOwner
	if os.Geteuid() == 0 {
		owner = broker.Owner{UID: uid, GID: uid}
	}
	path := inv.socketPath()
	l, err := broker.Listen(path, owner)
	if errors.Is(err, broker.ErrSocketCollision) {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "broker socket %s already exists (another invocation with this id, or one a crash left; run: skillrun gc): %w", path, ErrCollision)
	}
	if err != nil {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "broker socket %s: %v", path, err)
	}
	inv.undo = append(inv.undo, func() { _ = l.Close() })
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := b.Serve(sctx, l); err != nil {
			inv.log.Warn("broker stopped", "err", err)
		}
	}()
	inv.undo = append(inv.undo, func() { cancel(); <-served })
	return b, nil
}

// materialize copies the skill tree, as hashed, to where the sandbox runs
// it from: an edit after the trust check never reaches the skill, and the
// invocation's uid can read the copy whatever the original's modes.
func (inv *invocation) materialize(uid int) (string, error) {
	dir := inv.stateDir()
	if inv.plan.Isolation != enforce.IsolationContainer {
		// No mount namespace: the subprocess reads the copy directly, so it
		// lives outside the private state dir and belongs to its uid.
		tmp, err := os.MkdirTemp("", "skillrun-skill-")
		if err != nil {
			return "", fail(OutcomeSetupFailed, ExitSetup, "skill copy: %v", err)
		}
		inv.undo = append(inv.undo, func() { _ = os.RemoveAll(tmp) })
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "state dir: %v", err)
	}
	inv.undo = append(inv.undo, func() { _ = os.RemoveAll(inv.stateDir()) })
	copyDir := filepath.Join(dir, "skill")
	if err := inv.snap.Materialize(copyDir); err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "%v", err)
	}
	if inv.plan.Isolation != enforce.IsolationContainer && os.Geteuid() == 0 {
		if err := chownTree(dir, uid); err != nil {
			return "", fail(OutcomeSetupFailed, ExitSetup, "skill copy: %v", err)
		}
	}
	return copyDir, nil
}

func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// shimBinary is the binary the sandbox runs as its pid 1 and exec stage:
// skillrun-shim beside this executable, else this executable, or the
// one the options name; whichever it is passes runtime.CheckShim.
func (inv *invocation) shimBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "locate skillrun binary: %v", err)
	}
	if inv.opts.ShimBinary == "" {
		shim, _, err := runtime.LocateShim(exe)
		if err != nil {
			return "", fail(OutcomeSetupFailed, ExitSetup, "%v", err)
		}
		return shim, nil
	}
	shim, err := filepath.EvalSymlinks(inv.opts.ShimBinary)
	if err == nil {
		if shim, err = filepath.Abs(shim); err == nil {
			err = runtime.CheckShim(shim, exe)
		}
	}
	if err != nil {
		return "", fail(OutcomeSetupFailed, ExitSetup, "shim %s: %v", inv.opts.ShimBinary, err)
	}
	return shim, nil
}

// startSandbox builds and starts the sandbox for the plan's isolation.
func (inv *invocation) startSandbox(uid int, source string) (runtime.Sandbox, error) {
	o := inv.opts
	shim, err := inv.shimBinary()
	if err != nil {
		return nil, err
	}
	spec := runtime.Spec{
		Plan: inv.plan, InvocationID: o.InvocationID, TenantID: o.Tenant, Args: o.Args,
		SocketPath: inv.socketPath(), StateDir: inv.stateDir(),
		ContainerDir: filepath.Join(o.Root, "containers"), UID: uid, GID: uid, ShimBinary: shim, SkillSource: source,
		MinLandlockABI: MinLandlockABI, AllowDegraded: o.AllowDegraded,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Logger: inv.log,
	}
	var sb runtime.Sandbox
	if inv.plan.Isolation == enforce.IsolationContainer {
		sb, err = runtime.NewContainer(spec)
	} else {
		sb, err = runtime.NewProcess(spec)
	}
	if err != nil {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "sandbox: %v", err)
	}
	inv.undo = append(inv.undo, func() {
		if err := sb.Destroy(); err != nil {
			inv.log.Warn("destroy sandbox", "err", err)
		}
	})
	if err := sb.Start(); err != nil {
		return nil, fail(OutcomeSetupFailed, ExitSetup, "sandbox: %v", err)
	}
	return sb, nil
}

type waited struct {
	exit runtime.Exit
	err  error
}

// supervise waits for the skill, sending SIGTERM at 90% of the budget and
// killing the whole sandbox at 100%; a skill that declared tools and has
// not connected by the connect deadline is recorded no_connect and stopped.
func (inv *invocation) supervise(ctx context.Context, sb runtime.Sandbox, b *broker.Broker, res Result) (Result, error) {
	exited := make(chan waited, 1)
	go func() {
		e, err := sb.Wait()
		phase.Mark("skill-exit")
		exited <- waited{e, err}
	}()
	term, kill := time.NewTimer(inv.plan.TermAfter), time.NewTimer(inv.plan.Budget)
	defer term.Stop()
	defer kill.Stop()
	var connectDeadline <-chan time.Time
	if len(inv.decl.Tools) > 0 && inv.opts.ConnectTimeout > 0 {
		t := time.NewTimer(inv.opts.ConnectTimeout)
		defer t.Stop()
		connectDeadline = t.C
	}
	connected := b.Connected()
	var termSent, killed, noConnect, interrupted bool
	var w waited
wait:
	for {
		select {
		case w = <-exited:
			break wait
		case <-term.C:
			termSent = true
			_ = sb.Signal(syscall.SIGTERM)
		case <-kill.C:
			killed = true
			_ = sb.Kill()
		case <-connected:
			connected, connectDeadline = nil, nil
		case <-connectDeadline:
			noConnect = true
			inv.audit(ctx, store.KindNoConnect, map[string]any{"connect_timeout_ms": inv.opts.ConnectTimeout.Milliseconds()})
			_ = sb.Kill()
		case <-ctx.Done():
			interrupted = true
			_ = sb.Kill()
			ctx = context.WithoutCancel(ctx)
		}
	}
	if w.err != nil {
		return res, fail(OutcomeSetupFailed, ExitSetup, "wait for the skill: %v", w.err)
	}
	res.ExitCode, res.Outcome = w.exit.Code, OutcomeCompleted
	switch {
	case interrupted:
		return res, fail(OutcomeInterrupted, 128+int(syscall.SIGINT), "interrupted: the skill was stopped")
	case noConnect:
		return res, fail(OutcomeNoConnect, ExitSetup, "skill %s declared tools but did not connect to the broker within %s; it was stopped", inv.snap.ID(), inv.opts.ConnectTimeout)
	case termSent || killed:
		inv.audit(ctx, store.KindTimeout, map[string]any{"budget_ms": inv.plan.Budget.Milliseconds(),
			"term_after_ms": inv.plan.TermAfter.Milliseconds(), "killed": killed, "skill_exit_code": w.exit.Code})
		res.Outcome, res.ExitCode = OutcomeTimeout, ExitTimeout
	case w.exit.Signal != nil || w.exit.OOMKilled:
		// Killed by a signal skillrun did not send: the OOM killer, or
		// the skill's own kill; exited 128+N by itself is "completed".
		res.Outcome, res.OOMKilled = OutcomeKilled, w.exit.OOMKilled
	}
	return res, nil
}
