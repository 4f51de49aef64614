package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/internal/phase"
	"github.com/skillrun/skillrun/invocation"
	"github.com/skillrun/skillrun/runtime"
)

func newExec(g *globals) *cobra.Command {
	var o invocation.Options
	var traceparent string
	cmd := &cobra.Command{
		Use:   "exec [flags] DIR [-- ARGS...]",
		Short: "Run a trusted skill in the sandbox, brokering its tool calls",
		Long: `exec loads the skill, refuses it unless its content hash is trusted and it is
not quarantined, derives and verifies its grant plan, starts the broker on
/tmp/cyberos-skill-broker.<invocation_id>.sock and runs the entrypoint in a
fresh container (namespaces, seccomp, Landlock, cgroups, rlimits).

It prints "invocation <id>" on stderr first; the skill's stdout and stderr
pass through untouched.

Spans and metrics go where the standard OTEL_* environment says: OTLP when
OTEL_EXPORTER_OTLP_ENDPOINT (or a per-signal endpoint) is set or
OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER say otlp, JSON on stderr for
console, nowhere by default. The invocation continues the trace of
--traceparent, or of the TRACEPARENT environment variable. The skill gets SIGTERM at 90% of its budget
(effort_minutes, or --timeout) and the whole sandbox is killed at 100%.

Exit codes: the skill's own when it ran to completion; 124 timeout; 125
skillrun could not set up (validation, trust, quarantine, loader defect,
sandbox step, a skill that declared tools and never connected); 126
entrypoint not executable; 127 entrypoint not found; 128+N killed by
signal N.`,
		Example: `  skillrun trust ./skills/report
  skillrun exec ./skills/report -- --month 2026-10
  skillrun exec --timeout 30s --tenant acme ./skills/report
  skillrun exec --isolation rlimit ./skills/report   # explicit fallback: rlimits only
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 skillrun exec ./skills/report`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			phase.Mark("cli")
			if n := cmd.ArgsLenAtDash(); n > 1 || (n == -1 && len(args) > 1) {
				return fmt.Errorf("%w: exec takes one skill folder; pass the skill's arguments after --", errUsage)
			}
			o.SkillDir, o.Args = args[0], args[1:]
			var err error
			if o.TraceParent, err = g.traceParent(traceparent); err != nil {
				return err
			}
			tel, err := g.telemetry(cmd.Context())
			if err != nil {
				return withCode(exitSetup, err)
			}
			defer g.shutdownTelemetry(cmd.Context(), tel)
			o.Telemetry = tel
			o.Root = g.root
			phase.Mark("telemetry")
			o.Host = runtime.ProbeForExec(cmd.Context())
			phase.Mark("probe")
			o.Stdin, o.Stdout, o.Stderr, o.Logger = g.stdin, g.stdout, g.stderr, g.log
			o.Started = func(id string) { fmt.Fprintf(g.stderr, "invocation %s\n", id) }
			res, err := invocation.Run(cmd.Context(), o)
			phase.Mark("run")
			defer phase.Report(g.stderr)
			var ie *invocation.Error
			if errors.As(err, &ie) {
				return withCode(ie.ExitCode, ie)
			}
			if err != nil {
				return withCode(invocation.ExitSetup, err)
			}
			if res.ExitCode != 0 {
				g.log.Info("skill ended", "invocation", res.InvocationID, "outcome", res.Outcome, "exit_code", res.ExitCode)
				if res.Outcome == invocation.OutcomeTimeout {
					return withCode(res.ExitCode, fmt.Errorf("invocation %s timed out after %s", res.InvocationID, res.Duration.Round(time.Millisecond)))
				}
				return &exitError{code: res.ExitCode, silent: true}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Timeout, "timeout", 0, "budget for this run, overriding effort_minutes (SIGTERM at 90%, SIGKILL at 100%)")
	f.StringVar(&o.InvocationID, "invocation-id", "", "invocation id (default: random); names the broker socket")
	f.StringVar(&o.Tenant, "tenant", "default", "tenant whose memory the skill sees")
	f.BoolVar(&o.Strict, "strict", false, "refuse to run when any isolation feature is missing")
	f.BoolVar(&o.AllowDegraded, "allow-degraded", false, "run below the minimum Landlock ABI, recording the ABI used")
	f.StringVar(&o.Isolation, "isolation", invocation.IsolationAuto, "auto, container, or rlimit (a plain subprocess with rlimits)")
	f.DurationVar(&o.ConnectTimeout, "connect-timeout", invocation.DefaultConnectTimeout, "how long a skill that declared tools may take to connect to the broker (negative: no limit)")
	f.StringVar(&o.Approvals, "approvals", invocation.ApprovalsDeny, "a Bash command no rule covers: deny, or ask (park it until 'skillrun approvals approve|deny')")
	f.DurationVar(&o.ApprovalWait, "approval-wait", invocation.DefaultApprovalWait, "how long a parked command waits for a verdict; then it is denied and nothing is remembered")
	f.StringVar(&o.OnViolation, "on-violation", "deny", "a skill fault: deny, or quarantine (revoke every grant for the rest of the run and quarantine the skill)")
	lim := enforce.DefaultLimits()
	f.Var(sizeFlag{&lim.MemoryBytes}, "max-memory", "operator default of the memory cgroup limit (a skill's x-max-memory may lower it)")
	f.Var(sizeFlag{&lim.AddressSpace}, "max-address-space", "operator default of RLIMIT_AS (Go, Node and JVM entrypoints need 1GiB or more)")
	f.Int64Var(&lim.PidsMax, "max-pids", lim.PidsMax, "operator default of the pids cgroup limit (threads count)")
	f.Int64Var(&lim.NProc, "nproc", lim.NProc, "RLIMIT_NPROC of the skill's uid")
	f.Int64Var(&lim.NoFile, "nofile", lim.NoFile, "RLIMIT_NOFILE")
	f.Var(sizeFlag{&lim.TmpBytes}, "tmp-size", "size of the sandbox's tmpfs /tmp")
	// The flags fill lim while parsing; the run takes it as it ends up.
	cmd.PreRunE = func(*cobra.Command, []string) error {
		o.Limits = lim
		return nil
	}
	f.IntVar(&o.UIDBase, "uid-base", runtime.DefaultUIDBase, "first host uid of the range handed to invocations")
	f.StringVar(&traceparent, "traceparent", "", "W3C traceparent whose trace the invocation continues (default: env TRACEPARENT)")
	f.IntVar(&o.UIDCount, "uid-count", runtime.DefaultUIDCount, "number of uids in that range (the most concurrent invocations)")
	return cmd
}

// traceParent is the operator's traceparent: the flag's, which must be
// valid, else TRACEPARENT's, ignored with a warning when it is not — an
// environment variable leaks in from wherever skillrun was started, and
// the W3C answer to a bad traceparent is a new trace, not a refusal.
func (g *globals) traceParent(flag string) (string, error) {
	if flag != "" {
		if _, err := broker.ParseTraceParent(flag); err != nil {
			return "", fmt.Errorf("%w: --traceparent %q: %v", errUsage, flag, err)
		}
		return flag, nil
	}
	env := g.getenv("TRACEPARENT")
	if env == "" {
		return "", nil
	}
	if _, err := broker.ParseTraceParent(env); err != nil {
		g.log.Warn("ignoring TRACEPARENT", "value", env, "err", err)
		return "", nil
	}
	return env, nil
}
