package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/telemetry"
)

// globals are the flags every command shares.
type globals struct {
	logLevel string
	root     string
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	log      *slog.Logger
	getenv   func(string) string
}

// Run parses args and runs one command. It is the only entry point; main
// turns its error into the exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && isCobraUsage(err) {
		return fmt.Errorf("%w: %v (see 'skillrun --help')", errUsage, err)
	}
	return err
}

// isCobraUsage tells cobra's argument and flag errors, which it reports
// only as text, from errors returned by a command.
func isCobraUsage(err error) bool {
	var ee *exitError
	if errors.As(err, &ee) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs", "invalid argument", "accepts ", "requires at least", "requires exactly", "bad flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "skillrun",
		Short: "Run untrusted agent skills in a sandbox, brokering every tool call",
		Long: `skillrun runs third-party agent skills inside fresh namespaces with seccomp,
Landlock, cgroups and rlimits. A skill's only way to act is a JSON-RPC tool
call to a broker that checks it against what the skill declared in SKILL.md,
audits it and traces it.`,
		Example: `  skillrun doctor
  skillrun validate ./examples/skills/hello
  skillrun trust ./examples/skills/hello
  skillrun exec ./examples/skills/hello
  skillrun broker replay --invocation 7f3c9a1e2b4d5f6a7b8c9d0e`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			lvl, err := parseLevel(g.logLevel)
			if err != nil {
				return withCode(exitUsage, err)
			}
			g.log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: lvl}))
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", envOr("SKILLRUN_LOG", "warn"), "log level: debug, info, warn or error (env SKILLRUN_LOG)")
	root.PersistentFlags().StringVar(&g.root, "root", store.DefaultRoot(), "state directory (env SKILLRUN_ROOT; /var/lib/skillrun as root)")
	root.AddCommand(newValidate(g), newDoctor(g), newTrust(g), newExec(g), newGC(g), newBroker(g),
		newQuarantine(g), newApprovals(g), newVersion(g))
	return root
}

// telemetry builds the process's tracer and meter providers from the
// OTEL_* environment. Only exec traces anything, so only exec builds them:
// a stray OTEL_ value cannot break validate or gc. The caller must call
// shutdownTelemetry on every path out.
func (g *globals) telemetry(ctx context.Context) (*telemetry.Telemetry, error) {
	return telemetry.Setup(ctx, telemetry.Config{Getenv: g.getenv, Stderr: g.stderr, Logger: g.log, ServiceVersion: buildVersion()})
}

// shutdownTelemetry flushes what is left to export, within
// telemetry.ShutdownTimeout even if ctx was cancelled (an interrupted
// invocation is worth its spans too). A collector that cannot be reached
// is worth a warning, never a different exit code.
func (g *globals) shutdownTelemetry(ctx context.Context, tel *telemetry.Telemetry) {
	if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
		g.log.Warn("telemetry not flushed", "err", err)
	}
}

// buildVersion is the module version this binary was built from, as
// version prints it.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
