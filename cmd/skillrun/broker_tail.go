package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/invocation"
	"github.com/skillrun/skillrun/store"
)

// tailPoll is how often tail --follow reads new rows. A line then shows at
// most ~100 ms (plus one indexed query) after its row is committed, well
// within the 250 ms a live view needs, and ten small reads a second cost a
// WAL database nothing that a writer would notice.
const tailPoll = 100 * time.Millisecond

// defaultTailWait is how long tail --follow waits for an invocation that
// does not exist yet: long enough for an exec started a moment before to
// record it, short enough that a mistyped id fails soon.
const defaultTailWait = 10 * time.Second

// exitInterrupted is tail --follow stopped by Ctrl-C or SIGTERM: 128+SIGINT,
// as a shell reports it, so a script tells it from "the invocation ended".
const exitInterrupted = 130

type tailOptions struct {
	id     string
	asJSON bool
	follow bool
	wait   time.Duration
}

func newBrokerTail(g *globals) *cobra.Command {
	var o tailOptions
	cmd := &cobra.Command{
		Use:   "tail --invocation ID [--follow] [--json]",
		Short: "Print a line per tool call of an invocation, live with --follow",
		Long: `tail prints one line per tool call of an invocation: its time (UTC), tool,
outcome (success, error, timeout) or denial reason, and duration; then, once
the invocation has ended, a line saying how it ended. Calls still running
have no line yet: a line is written when a call completes or is denied.

Without --follow, tail prints the calls recorded so far and exits 0, whether
the invocation has ended or not. An unknown invocation is an error (exit 1).

With --follow (-f), tail keeps printing calls as they happen, each within
about 100 ms of the broker recording it, and exits when the invocation ends:
0 when it finished (whatever its own outcome), 1 when its supervisor died
without finishing it (run 'skillrun gc'), 130 when interrupted. An
invocation that does not exist yet is waited for, up to --wait (default
10s), so tail may be started together with 'skillrun exec --invocation-id'.

--json prints one JSON object per line instead:
  {"ts", "kind", "tool", "outcome" or "reason", "duration_ms", "trace_id"}
with kind skill.tool_call_completed or skill.tool_denied; the last object,
once the invocation ended, has kind skill.invoked_completed, its outcome
and exit_code. Notes go to stderr.`,
		Example: `  skillrun broker tail --invocation 7f3c9a1e2b4d5f6a7b8c9d0e
  skillrun exec --invocation-id report-1 ./skills/report &
  skillrun broker tail --invocation report-1 --follow
  skillrun broker tail --invocation report-1 -f --json | jq -r 'select(.kind == "skill.tool_denied") | .reason'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.id == "" {
				return fmt.Errorf("%w: --invocation ID is required (see 'skillrun broker tail --help')", errUsage)
			}
			return runTail(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "invocation", "", "the invocation id (skillrun exec prints it first)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing calls until the invocation ends")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object per line")
	f.DurationVar(&o.wait, "wait", defaultTailWait, "with --follow, how long to wait for an invocation that does not exist yet")
	return cmd
}

// tailer prints an invocation's rows from seq on.
type tailer struct {
	st     *store.Store
	o      tailOptions
	out    io.Writer
	errOut io.Writer
	seq    int64 // the last row printed or skipped
}

func runTail(ctx context.Context, g *globals, o tailOptions) error {
	st, err := store.Open(ctx, g.root)
	if err != nil {
		return withCode(exitSetup, err)
	}
	defer st.Close()
	t := &tailer{st: st, o: o, out: g.stdout, errOut: g.stderr}
	skill, err := t.find(ctx)
	if err != nil {
		return err
	}
	if !o.asJSON {
		if _, err := fmt.Fprintf(t.out, "invocation %s of skill %s; times UTC\n", o.id, skill); err != nil {
			return err
		}
	}
	ended, err := t.drain(ctx)
	if err != nil || ended {
		return err
	}
	if !o.follow {
		t.snapshotNote(ctx)
		return nil
	}
	return t.followUntilEnd(ctx)
}

// find returns the invocation's skill, from its record or, for one refused
// before it began, from its rows. With --follow an id not recorded yet is
// polled for, up to --wait.
func (t *tailer) find(ctx context.Context) (string, error) {
	deadline := time.Now().Add(t.o.wait)
	for {
		inv, err := t.st.Invocation(ctx, t.o.id)
		if err == nil {
			return inv.SkillID, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", t.fail(ctx, err)
		}
		rows, err := t.st.RowsSince(ctx, t.o.id, 0)
		if err != nil {
			return "", t.fail(ctx, err)
		}
		if len(rows) > 0 {
			return rows[0].SkillID, nil
		}
		if !t.o.follow {
			return "", withCode(exitFailure, fmt.Errorf("invocation %q not found in %s", t.o.id, t.st.Path()))
		}
		if !time.Now().Before(deadline) {
			return "", withCode(exitFailure, fmt.Errorf("invocation %q not found in %s after waiting %s", t.o.id, t.st.Path(), t.o.wait))
		}
		if err := sleepCtx(ctx, tailPoll); err != nil {
			return "", t.fail(ctx, err)
		}
	}
}

// followUntilEnd polls for new rows until the invocation ends, its
// supervisor dies, or ctx is done.
func (t *tailer) followUntilEnd(ctx context.Context) error {
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return t.fail(ctx, ctx.Err())
		case <-tick.C:
		}
		ended, err := t.drain(ctx)
		if err != nil || ended {
			return err
		}
		if ended, err := t.checkEnd(ctx); err != nil || ended {
			return err
		}
	}
}

// checkEnd looks at the invocation's record when no invoked_completed row
// has come: the row may be lost, or never written because the supervisor
// died. Since the supervisor writes that row before it finishes the record
// and both before it exits, one more read after either sign of the end
// finds the row if it exists.
func (t *tailer) checkEnd(ctx context.Context) (bool, error) {
	inv, err := t.st.Invocation(ctx, t.o.id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Rows without a record: refused before it began; nothing follows.
		fmt.Fprintf(t.errOut, "note: invocation %s never began (refused before its sandbox started); see 'skillrun broker replay --invocation %s'\n", t.o.id, t.o.id)
		return true, nil
	case err != nil:
		return false, t.fail(ctx, err)
	case !inv.Finished() && invocation.SupervisorAlive(inv.SupervisorPID):
		return false, nil
	}
	if ended, err := t.drain(ctx); err != nil || ended {
		return ended, err
	}
	if !inv.Finished() {
		if inv, err = t.st.Invocation(ctx, t.o.id); err != nil {
			return false, t.fail(ctx, err)
		}
	}
	if !inv.Finished() {
		return false, withCode(exitFailure, fmt.Errorf("invocation %s: its supervisor (pid %d) is gone and the invocation never finished; run 'skillrun gc'", t.o.id, inv.SupervisorPID))
	}
	fmt.Fprintf(t.errOut, "note: invocation %s has no skill.invoked_completed row (lost); its end is from the invocation record\n", t.o.id)
	code := inv.ExitCode
	return true, t.emit(tailLine{TS: inv.FinishedAt, Kind: store.KindInvokedCompleted, Outcome: inv.Outcome, ExitCode: &code})
}

// snapshotNote says, after a tail without --follow, that there may be more
// to come, or that there will not be although the record says active.
func (t *tailer) snapshotNote(ctx context.Context) {
	inv, err := t.st.Invocation(ctx, t.o.id)
	switch {
	case err != nil || inv.Finished():
	case invocation.SupervisorAlive(inv.SupervisorPID):
		fmt.Fprintf(t.errOut, "note: invocation %s is still running; --follow prints its calls until it ends\n", t.o.id)
	default:
		fmt.Fprintf(t.errOut, "note: invocation %s never finished and its supervisor (pid %d) is gone; run 'skillrun gc'\n", t.o.id, inv.SupervisorPID)
	}
}

// drain prints the rows written since the last one seen. ended reports the
// invoked_completed row, after which no row of the invocation is written.
func (t *tailer) drain(ctx context.Context) (ended bool, err error) {
	rows, err := t.st.RowsSince(ctx, t.o.id, t.seq)
	if err != nil {
		return false, t.fail(ctx, err)
	}
	for _, r := range rows {
		t.seq = r.Seq
		l, ok := lineOf(r)
		if !ok {
			continue
		}
		if err := t.emit(l); err != nil {
			return false, err
		}
		if r.Kind == store.KindInvokedCompleted {
			return true, nil
		}
	}
	return false, nil
}

// fail is an error of the store, or the interruption that caused it.
func (t *tailer) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, silent: true}
	}
	return withCode(exitSetup, err)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// tailLine is one printed line.
type tailLine struct {
	TS         time.Time
	Kind       string
	Tool       string
	Outcome    string
	Reason     string
	DurationMS *int64
	ExitCode   *int
	TraceID    string
}

// lineOf is the line of a row, if its kind has one: completed and denied
// calls, and the end. A started call waits for its completion.
func lineOf(r store.Row) (tailLine, bool) {
	p := parsePayload(r)
	l := tailLine{TS: r.TS, Kind: r.Kind, TraceID: p.TraceID}
	switch r.Kind {
	case store.KindToolCallCompleted:
		l.Tool, l.Outcome, l.DurationMS = p.ToolName, p.Outcome, p.DurationMS
	case store.KindToolDenied:
		l.Tool, l.Reason = p.ToolName, p.Reason
	case store.KindInvokedCompleted:
		l.Outcome, l.ExitCode, l.DurationMS = p.Outcome, p.ExitCode, p.DurationMS
	default:
		return tailLine{}, false
	}
	return l, true
}

func (t *tailer) emit(l tailLine) error {
	if t.o.asJSON {
		b, err := json.Marshal(struct {
			TS         string `json:"ts"`
			Kind       string `json:"kind"`
			Tool       string `json:"tool,omitempty"`
			Outcome    string `json:"outcome,omitempty"`
			Reason     string `json:"reason,omitempty"`
			DurationMS *int64 `json:"duration_ms,omitempty"`
			ExitCode   *int   `json:"exit_code,omitempty"`
			TraceID    string `json:"trace_id,omitempty"`
		}{l.TS.UTC().Format(time.RFC3339Nano), l.Kind, l.Tool, l.Outcome, l.Reason, l.DurationMS, l.ExitCode, l.TraceID})
		if err != nil {
			return err
		}
		_, err = t.out.Write(append(b, '\n'))
		return err
	}
	_, err := io.WriteString(t.out, humanLine(l))
	return err
}

// humanLine is fixed-width, not tabwriter-aligned: a stream cannot wait
// for the widest row.
func humanLine(l tailLine) string {
	ts := l.TS.UTC().Format("15:04:05.000")
	p := replayed{Outcome: l.Outcome, Reason: l.Reason, DurationMS: l.DurationMS, ExitCode: l.ExitCode}
	if l.Kind == store.KindInvokedCompleted {
		s := ts + "  invocation ended: " + detail(l.Kind, p)
		if l.DurationMS != nil {
			s += " after " + duration(p)
		}
		return s + "\n"
	}
	what := l.Outcome
	if l.Kind == store.KindToolDenied {
		what = "denied: " + l.Reason
	}
	return fmt.Sprintf("%s  %-12s  %-34s  %-6s  %s\n", ts, orDash(l.Tool), orDash(what), duration(p), orDash(short(l.TraceID)))
}
