package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/store"
)

// newBroker is the parent of the commands that look at the broker's record
// of tool calls: what runs now (status), live (tail), and afterwards
// (replay).
func newBroker(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Inspect the tool calls the broker recorded",
		Long: `The broker checks, runs and audits every tool call of a skill. Its audit rows
are in the state store (--root); these commands only read them, so they are
safe to run while any number of skillrun exec processes write.`,
		Example: `  skillrun broker status
  skillrun broker tail --invocation 7f3c9a1e2b4d5f6a7b8c9d0e --follow
  skillrun broker replay --invocation 7f3c9a1e2b4d5f6a7b8c9d0e`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newBrokerStatus(g), newBrokerTail(g), newBrokerReplay(g))
	return cmd
}

func newBrokerReplay(g *globals) *cobra.Command {
	var (
		id     string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "replay --invocation ID [--json]",
		Short: "Reconstruct a past invocation's tool calls from its audit rows",
		Long: `replay prints an invocation's audit rows in the order they were written:
its start, each tool call (started, then completed or denied), timeouts and
its end. It then checks the record: a tool call started but never completed
is a crash point; a completed call without its start, or an invocation that
never finished, means rows are missing. --json prints the rows as a JSON
array of {ts, kind, payload}; the notes then go to stderr.`,
		Example: `  skillrun broker replay --invocation 7f3c9a1e2b4d5f6a7b8c9d0e
  skillrun broker replay --invocation 7f3c9a1e2b4d5f6a7b8c9d0e --json | jq '.[] | select(.kind == "skill.tool_denied")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return fmt.Errorf("%w: --invocation ID is required (see 'skillrun broker replay --help')", errUsage)
			}
			rows, inv, err := loadReplay(cmd.Context(), g.root, id)
			if err != nil {
				return err
			}
			notes := integrityNotes(rows, inv)
			if asJSON {
				if err := printReplayJSON(g.stdout, rows); err != nil {
					return err
				}
				for _, n := range notes {
					fmt.Fprintf(g.stderr, "note: %s\n", n)
				}
				return nil
			}
			printReplay(g.stdout, id, rows, inv)
			for _, n := range notes {
				fmt.Fprintf(g.stdout, "note: %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "invocation", "", "the invocation id (skillrun exec prints it first)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows as a JSON array of {ts, kind, payload}")
	return cmd
}

// loadReplay reads an invocation's rows and, if there is one, its record.
// An id with neither is an error: most likely a typo.
func loadReplay(ctx context.Context, root, id string) ([]store.Row, *store.Invocation, error) {
	st, err := store.Open(ctx, root)
	if err != nil {
		return nil, nil, withCode(exitSetup, err)
	}
	defer st.Close()
	rows, err := st.Rows(ctx, id)
	if err != nil {
		return nil, nil, withCode(exitSetup, err)
	}
	inv, err := st.Invocation(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound) && len(rows) == 0:
		return nil, nil, withCode(exitFailure, fmt.Errorf("invocation %q not found in %s", id, st.Path()))
	case errors.Is(err, store.ErrNotFound):
		// A skill refused before it began (a loader defect) has rows only.
		return rows, nil, nil
	case err != nil:
		return nil, nil, withCode(exitSetup, err)
	}
	return rows, &inv, nil
}

// replayed is what replay reads from a payload; rows of every kind share it.
type replayed struct {
	ToolName   string `json:"tool_name"`
	Tool       string `json:"tool"` // what rows said before tool_name
	CallID     string `json:"call_id"`
	TraceID    string `json:"trace_id"`
	ArgsHash   string `json:"args_hash"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason"`
	Isolation  string `json:"isolation"`
	DurationMS *int64 `json:"duration_ms"`
	ExitCode   *int   `json:"exit_code"`
	Killed     *bool  `json:"killed"`
	Lost       int64  `json:"audit_rows_lost"`
}

func parsePayload(r store.Row) replayed {
	var p replayed
	_ = json.Unmarshal(r.Payload, &p) // the store only holds JSON objects
	if p.ToolName == "" {
		p.ToolName = p.Tool
	}
	if p.TraceID == "" {
		p.TraceID = r.TraceID
	}
	return p
}

// callKey pairs a call's rows: its call_id, or for rows written before
// call_id existed, what the call's rows had in common.
func (p replayed) callKey() string {
	if p.CallID != "" {
		return p.CallID
	}
	return p.TraceID + "/" + p.ToolName + "/" + p.ArgsHash
}

// integrityNotes checks the record (seed §2: "started without completed =
// crash; completed without started = impossible, an integrity check").
func integrityNotes(rows []store.Row, inv *store.Invocation) []string {
	var notes []string
	open := map[string][]store.Row{} // started, not yet completed, by call
	var order []string               // keys in the order calls started
	var end *replayed
	for _, r := range rows {
		p := parsePayload(r)
		switch r.Kind {
		case store.KindToolCallStarted:
			k := p.callKey()
			if len(open[k]) == 0 {
				order = append(order, k)
			}
			open[k] = append(open[k], r)
		case store.KindToolCallCompleted:
			k := p.callKey()
			if len(open[k]) == 0 {
				notes = append(notes, fmt.Sprintf("integrity: tool %s completed at %s without a started row (call %s)", p.ToolName, stamp(r.TS), short(k)))
				continue
			}
			open[k] = open[k][1:]
		case store.KindInvokedCompleted:
			end = &p
		}
	}
	for _, k := range order {
		for _, r := range open[k] {
			notes = append(notes, fmt.Sprintf("crash point: tool %s started at %s, never completed (call %s)", parsePayload(r).ToolName, stamp(r.TS), short(k)))
		}
	}
	return append(notes, endNotes(rows, inv, end)...)
}

// endNotes says how the record ends: not at all, lost by its supervisor,
// or with rows the store never got.
func endNotes(rows []store.Row, inv *store.Invocation, end *replayed) []string {
	switch {
	case len(rows) == 0:
		return []string{"no audit rows"}
	case end == nil && inv != nil && !inv.Finished():
		return []string{"invocation never finished (supervisor lost?): it is still recorded as active, so it is running now or its supervisor died (skillrun gc collects it)"}
	case end == nil && (inv != nil || rows[0].Kind != store.KindLoaderDefect):
		return []string{"invocation never finished (supervisor lost?)"}
	case end == nil:
		return nil // refused before it began: nothing to finish
	}
	var notes []string
	if end.Outcome == "supervisor_lost" {
		notes = append(notes, "invocation never finished: its supervisor was lost and skillrun gc recorded the end")
	}
	if end.Lost > 0 {
		notes = append(notes, fmt.Sprintf("%d audit rows were lost (the store was unavailable): this record is incomplete", end.Lost))
	}
	return notes
}

func printReplayJSON(w io.Writer, rows []store.Row) error {
	type jsonRow struct {
		TS      string          `json:"ts"`
		Kind    string          `json:"kind"`
		Payload json.RawMessage `json:"payload"`
	}
	out := make([]jsonRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, jsonRow{TS: r.TS.UTC().Format(time.RFC3339Nano), Kind: r.Kind, Payload: r.Payload})
	}
	return writeJSON(w, out)
}

// printReplay prints the rows as a table; times are UTC, the date once in
// the heading.
func printReplay(w io.Writer, id string, rows []store.Row, inv *store.Invocation) {
	head := "invocation " + id
	if inv != nil {
		head += " of skill " + inv.SkillID
	} else if len(rows) > 0 {
		head += " of skill " + rows[0].SkillID
	}
	if len(rows) > 0 {
		head += fmt.Sprintf(", %s UTC, %d rows", rows[0].TS.UTC().Format(time.DateOnly), len(rows))
	}
	fmt.Fprintln(w, head)
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tTOOL\tOUTCOME/REASON\tDURATION\tTRACE")
	for _, r := range rows {
		p := parsePayload(r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.TS.UTC().Format("15:04:05.000"),
			strings.TrimPrefix(r.Kind, "skill."), orDash(p.ToolName), orDash(detail(r.Kind, p)), duration(p), orDash(short(p.TraceID)))
	}
	tw.Flush()
}

// detail is the OUTCOME/REASON cell: what the row says happened.
func detail(kind string, p replayed) string {
	switch kind {
	case store.KindInvokedStarted:
		return p.Isolation
	case store.KindInvokedCompleted:
		if p.ExitCode != nil {
			return p.Outcome + " (exit " + strconv.Itoa(*p.ExitCode) + ")"
		}
		return p.Outcome
	case store.KindTimeout:
		if p.Killed != nil && *p.Killed {
			return "killed"
		}
		return "terminated"
	case store.KindToolCallStarted:
		return ""
	}
	if p.Reason != "" {
		return p.Reason
	}
	return p.Outcome
}

func duration(p replayed) string {
	switch {
	case p.DurationMS == nil:
		return "-"
	case *p.DurationMS < 1000:
		return strconv.FormatInt(*p.DurationMS, 10) + "ms" // 0ms, not 0s
	}
	return (time.Duration(*p.DurationMS) * time.Millisecond).String()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// short abbreviates an id for a table; 8 hex digits tell calls apart.
func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
