package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

const replayTrace = "0af7651916cd43dd8448eb211c80319c"

var replayT0 = time.Date(2026, 5, 16, 10, 0, 0, 0, time.UTC)

// at is a row at ms milliseconds after replayT0.
func at(ms int, kind, payload string) store.Row {
	return store.Row{TS: replayT0.Add(time.Duration(ms) * time.Millisecond), Kind: kind, Payload: json.RawMessage(payload)}
}

// seedInvocation records an invocation and its rows in a new state dir.
func seedInvocation(t *testing.T, id string, finished bool, rows ...store.Row) string {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.BeginInvocation(t.Context(), store.Invocation{ID: id, SkillID: "hello", StartedAt: replayT0}); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].InvocationID, rows[i].SkillID, rows[i].TraceID = id, "hello", replayTrace
	}
	if err := st.AuditBatch(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
	if finished {
		if err := st.FinishInvocation(t.Context(), id, "completed", 0); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var (
	rowStarted   = at(0, store.KindInvokedStarted, `{"isolation":"container"}`)
	rowReadStart = at(5, store.KindToolCallStarted, `{"tool_name":"Read","call_id":"c1a2b3c4d5e6f701","args_hash":"aa"}`)
	rowReadDone  = at(17, store.KindToolCallCompleted, `{"tool_name":"Read","call_id":"c1a2b3c4d5e6f701","args_hash":"aa","outcome":"success","duration_ms":12}`)
	rowDenied    = at(20, store.KindToolDenied, `{"tool_name":"Bash","call_id":"d1a2b3c4d5e6f702","reason":"tool_in_disallowed_tools","attempted_args_hash":"bb"}`)
	rowBashStart = at(30, store.KindToolCallStarted, `{"tool_name":"Bash","call_id":"e1a2b3c4d5e6f703","args_hash":"cc"}`)
	rowCompleted = at(1500, store.KindInvokedCompleted, `{"outcome":"completed","exit_code":0,"duration_ms":1500,"audit_rows_written":4,"audit_rows_lost":0}`)
)

func TestBrokerReplay(t *testing.T) {
	tests := []struct {
		name     string
		finished bool
		rows     []store.Row
		want     []string // lines of stdout, in order
		notes    []string // note lines, in order
	}{
		{
			name: "complete", finished: true,
			rows: []store.Row{rowStarted, rowReadStart, rowReadDone, rowDenied, rowCompleted},
			want: []string{
				"invocation inv-1 of skill hello, 2026-05-16 UTC, 5 rows",
				"TIME          KIND                 TOOL  OUTCOME/REASON            DURATION  TRACE",
				"10:00:00.000  invoked_started      -     container                 -         0af76519",
				"10:00:00.005  tool_call_started    Read  -                         -         0af76519",
				"10:00:00.017  tool_call_completed  Read  success                   12ms      0af76519",
				"10:00:00.020  tool_denied          Bash  tool_in_disallowed_tools  -         0af76519",
				"10:00:01.500  invoked_completed    -     completed (exit 0)        1.5s      0af76519",
			},
		},
		{
			name: "crashed in a tool call",
			rows: []store.Row{rowStarted, rowReadStart, rowReadDone, rowBashStart},
			notes: []string{
				"note: crash point: tool Bash started at 2026-05-16T10:00:00.030Z, never completed (call e1a2b3c4)",
				"note: invocation never finished (supervisor lost?): it is still recorded as active, so it is running now or its supervisor died (skillrun gc collects it)",
			},
		},
		{
			name: "completed without started", finished: true,
			rows:  []store.Row{rowStarted, rowReadDone, rowCompleted},
			notes: []string{"note: integrity: tool Read completed at 2026-05-16T10:00:00.017Z without a started row (call c1a2b3c4)"},
		},
		{
			name: "rows lost", finished: true,
			rows:  []store.Row{rowStarted, at(1500, store.KindInvokedCompleted, `{"outcome":"completed","exit_code":0,"audit_rows_written":1,"audit_rows_lost":7}`)},
			notes: []string{"note: 7 audit rows were lost (the store was unavailable): this record is incomplete"},
		},
		{
			name: "finished record, no invoked_completed row", finished: true,
			rows:  []store.Row{rowStarted},
			notes: []string{"note: invocation never finished (supervisor lost?)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := seedInvocation(t, "inv-1", tt.finished, tt.rows...)
			code, out, errOut := run(t, "--root", root, "broker", "replay", "--invocation", "inv-1")
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 2+len(tt.rows)+len(tt.notes) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), 2+len(tt.rows)+len(tt.notes), out)
			}
			for i, w := range tt.want {
				if lines[i] != w {
					t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], w)
				}
			}
			if got := lines[2+len(tt.rows):]; strings.Join(got, "\n") != strings.Join(tt.notes, "\n") {
				t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.notes, "\n"))
			}
		})
	}
}

// TestBrokerReplayJSON: stdout is only the array of rows; notes go to
// stderr.
func TestBrokerReplayJSON(t *testing.T) {
	root := seedInvocation(t, "inv-1", false, rowStarted, rowReadStart)
	code, out, errOut := run(t, "--root", root, "broker", "replay", "--invocation", "inv-1", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got []struct {
		TS      string         `json:"ts"`
		Kind    string         `json:"kind"`
		Payload map[string]any `json:"payload"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0].Kind != store.KindInvokedStarted || got[1].Kind != store.KindToolCallStarted ||
		got[1].TS != "2026-05-16T10:00:00.005Z" || got[1].Payload["call_id"] != "c1a2b3c4d5e6f701" || got[1].Payload["invocation_id"] != "inv-1" {
		t.Fatalf("rows %+v", got)
	}
	if !strings.HasPrefix(errOut, "note: crash point: tool Read started at 2026-05-16T10:00:00.005Z") || strings.Count(errOut, "\n") != 2 {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestBrokerReplayErrors(t *testing.T) {
	root := seedInvocation(t, "inv-1", true, rowStarted, rowCompleted)
	tests := []struct {
		name string
		args []string
		code int
		want string // stderr, whole or prefix
	}{
		{"unknown invocation", []string{"--invocation", "nope"}, exitFailure, `skillrun: invocation "nope" not found in ` + root + "/state.db\n"},
		{"no invocation", nil, exitUsage, "skillrun: usage: --invocation ID is required (see 'skillrun broker replay --help')\n"},
		{"argument", []string{"inv-1"}, exitUsage, "skillrun: usage: unknown command \"inv-1\" for \"skillrun broker replay\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"--root", root, "broker", "replay"}, tt.args...)...)
			if code != tt.code || !strings.HasPrefix(errOut, tt.want) || out != "" || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stderr %q", code, out, errOut, tt.code, tt.want)
			}
		})
	}
}

func TestBrokerHelp(t *testing.T) {
	for _, args := range [][]string{{"broker", "--help"}, {"broker", "replay", "--help"}, {"broker"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.Contains(out, "skillrun broker replay --invocation 7f3c9a1e2b4d5f6a7b8c9d0e") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}
