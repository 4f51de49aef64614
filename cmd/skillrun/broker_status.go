package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/invocation"
	"github.com/skillrun/skillrun/store"
)

func newBrokerStatus(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show active invocations and today's tool calls and denials",
		Long: `status prints the invocations recorded as active (id, skill, start, the pid of
their skillrun supervisor, isolation level) and how many tool calls the
broker dispatched and denied today.

An active invocation whose supervisor process is gone (killed, or the machine
lost power) never finished: it is marked stale, and 'skillrun gc' collects
what it left. It is the same test gc uses.

"Today" is the local calendar day: rows written since the last local
midnight, in the zone of the TZ environment variable (TZ=UTC counts the UTC
day). Tool calls are the calls dispatched to a tool (skill.tool_call_started
rows); denied are the calls refused (skill.tool_denied rows), which are not
also counted as tool calls.

--json prints one object:
  {"active_invocations": [{"invocation_id", "skill_id", "started_at",
    "pid", "isolation", "stale"}], "tool_calls_today", "denied_today",
   "since"}
started_at and since are RFC 3339; since is the midnight the counts start
at, with its UTC offset. Notes go to stderr then.

status only reads the state store, in one snapshot: it neither waits for nor
delays the exec processes writing it.`,
		Example: `  skillrun broker status
  skillrun broker status --json | jq '.active_invocations[] | select(.stale) | .invocation_id'
  TZ=UTC skillrun broker status --json   # count the UTC day`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadStatus(cmd.Context(), g.root, time.Now())
			if err != nil {
				return err
			}
			note := s.staleNote()
			if asJSON {
				if err := printStatusJSON(g.stdout, s); err != nil {
					return err
				}
				if note != "" {
					fmt.Fprintf(g.stderr, "note: %s\n", note)
				}
				return nil
			}
			printStatus(g.stdout, s, time.Now())
			if note != "" {
				fmt.Fprintf(g.stdout, "note: %s\n", note)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (keys in --help)")
	return cmd
}

// status is what `broker status` reports.
type status struct {
	since  time.Time // local midnight
	active []activeInvocation
	calls  int64
	denied int64
}

type activeInvocation struct {
	store.Invocation
	stale bool
}

// startOfDay is the midnight that began t's calendar day in t's zone. In a
// zone whose clocks skip midnight, time.Date normalises to the first
// instant of the day.
func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func loadStatus(ctx context.Context, root string, now time.Time) (status, error) {
	st, err := store.Open(ctx, root)
	if err != nil {
		return status{}, withCode(exitSetup, err)
	}
	defer st.Close()
	s := status{since: startOfDay(now)}
	a, err := st.ActivitySince(ctx, s.since, store.KindToolCallStarted, store.KindToolDenied)
	if err != nil {
		return status{}, withCode(exitSetup, err)
	}
	s.calls, s.denied = a.Counts[store.KindToolCallStarted], a.Counts[store.KindToolDenied]
	for _, inv := range a.Active {
		s.active = append(s.active, activeInvocation{Invocation: inv, stale: !invocation.SupervisorAlive(inv.SupervisorPID)})
	}
	return s, nil
}

func (s status) staleNote() string {
	var n int
	for _, a := range s.active {
		if a.stale {
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return "1 invocation is stale: its supervisor is gone and it never finished; run 'skillrun gc' to collect it"
	}
	return fmt.Sprintf("%d invocations are stale: their supervisors are gone and they never finished; run 'skillrun gc' to collect them", n)
}

func printStatusJSON(w io.Writer, s status) error {
	type active struct {
		InvocationID string `json:"invocation_id"`
		SkillID      string `json:"skill_id"`
		StartedAt    string `json:"started_at"`
		PID          int    `json:"pid"`
		Isolation    string `json:"isolation"`
		Stale        bool   `json:"stale"`
	}
	out := struct {
		Active []active `json:"active_invocations"`
		Calls  int64    `json:"tool_calls_today"`
		Denied int64    `json:"denied_today"`
		Since  string   `json:"since"`
	}{Active: []active{}, Calls: s.calls, Denied: s.denied, Since: s.since.Format(time.RFC3339)}
	for _, a := range s.active {
		out.Active = append(out.Active, active{
			InvocationID: a.ID, SkillID: a.SkillID, StartedAt: a.StartedAt.UTC().Format(time.RFC3339Nano),
			PID: a.SupervisorPID, Isolation: a.Isolation, Stale: a.stale,
		})
	}
	return writeJSON(w, out)
}

// printStatus prints a summary and a table. Times are local here, unlike
// replay's UTC, because "today" is the local day.
func printStatus(w io.Writer, s status, now time.Time) {
	fmt.Fprintf(w, "today (since %s): %d tool calls, %d denied\n", s.since.Format(time.RFC3339), s.calls, s.denied)
	switch len(s.active) {
	case 0:
		fmt.Fprintln(w, "no active invocations")
		return
	case 1:
		fmt.Fprintln(w, "1 active invocation")
	default:
		fmt.Fprintf(w, "%d active invocations\n", len(s.active))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INVOCATION\tSKILL\tSTARTED\tAGE\tPID\tISOLATION\tSTATE")
	for _, a := range s.active {
		state := "running"
		if a.stale {
			state = "stale" // the note below says what to do
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", a.ID, a.SkillID, a.StartedAt.Local().Format(time.DateTime),
			age(now.Sub(a.StartedAt)), a.SupervisorPID, orDash(a.Isolation), state)
	}
	tw.Flush()
}

// age is a duration to the second; a start in the future (clock skew
// between hosts sharing a store) reads as 0s, not as a negative age.
func age(d time.Duration) string {
	return max(d, 0).Round(time.Second).String()
}
