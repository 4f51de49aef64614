package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

// openStore opens the store of a state dir for a test's fixture.
func openStore(t *testing.T, root string) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.Pid()
}

// statusFixture records a live, a stale and a finished invocation, and
// rows today and yesterday: 3 calls and 2 denials today.
func statusFixture(t *testing.T) (root string, since time.Time) {
	t.Helper()
	root = t.TempDir()
	st := openStore(t, root)
	ctx := t.Context()
	now := time.Now()
	since = startOfDay(now)
	for _, inv := range []store.Invocation{
		{ID: "live", SkillID: "report", Isolation: "container", SupervisorPID: os.Getpid(), StartedAt: now.Add(-90 * time.Second)},
		{ID: "stale", SkillID: "hello", Isolation: "rlimit", SupervisorPID: deadPID(t), StartedAt: now.Add(-30 * time.Second)},
		{ID: "done", SkillID: "hello", Isolation: "container", SupervisorPID: os.Getpid(), StartedAt: now.Add(-time.Hour)},
	} {
		if err := st.BeginInvocation(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.FinishInvocation(ctx, "done", "completed", 0); err != nil {
		t.Fatal(err)
	}
	var rows []store.Row
	add := func(ts time.Time, kind, id, payload string) {
		rows = append(rows, store.Row{TS: ts, Kind: kind, InvocationID: id, SkillID: "report", Payload: json.RawMessage(payload)})
	}
	yesterday := since.Add(-time.Millisecond)
	for range 4 {
		add(yesterday, store.KindToolCallStarted, "done", `{"tool_name":"Read"}`)
	}
	add(yesterday, store.KindToolDenied, "done", `{"tool_name":"Bash","reason":"tool_not_declared"}`)
	add(since, store.KindToolCallStarted, "live", `{"tool_name":"Read"}`) // midnight itself is today
	add(now, store.KindToolCallStarted, "live", `{"tool_name":"Read"}`)
	add(now, store.KindToolCallStarted, "stale", `{"tool_name":"Grep"}`)
	add(now, store.KindToolCallCompleted, "live", `{"tool_name":"Read","outcome":"success","duration_ms":3}`)
	add(now, store.KindToolDenied, "live", `{"tool_name":"Bash","reason":"tool_not_declared"}`)
	add(now, store.KindToolDenied, "stale", `{"tool_name":"HttpFetch","reason":"domain_violation"}`)
	if err := st.AuditBatch(ctx, rows); err != nil {
		t.Fatal(err)
	}
	return root, since
}

func keys(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }

// Seed criterion 20: status --json has active_invocations, tool_calls_today
// and denied_today, and the counts are exact.
func TestBrokerStatusJSON(t *testing.T) {
	root, since := statusFixture(t)
	code, out, errOut := run(t, "--root", root, "broker", "status", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, out)
	}
	if got, want := keys(top), []string{"active_invocations", "denied_today", "since", "tool_calls_today"}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if string(top["tool_calls_today"]) != "3" || string(top["denied_today"]) != "2" {
		t.Errorf("tool_calls_today %s, denied_today %s; want 3 and 2", top["tool_calls_today"], top["denied_today"])
	}
	if want := `"` + since.Format(time.RFC3339) + `"`; string(top["since"]) != want {
		t.Errorf("since %s, want %s", top["since"], want)
	}
	var active []map[string]json.RawMessage
	if err := json.Unmarshal(top["active_invocations"], &active); err != nil || len(active) != 2 {
		t.Fatalf("active_invocations %s: %v", top["active_invocations"], err)
	}
	for _, a := range active {
		if got, want := keys(a), []string{"invocation_id", "isolation", "pid", "skill_id", "stale", "started_at"}; !slices.Equal(got, want) {
			t.Errorf("invocation keys %v, want %v", got, want)
		}
		var started string
		if err := json.Unmarshal(a["started_at"], &started); err != nil {
			t.Error(err)
		} else if _, err := time.Parse(time.RFC3339, started); err != nil {
			t.Errorf("started_at: %v", err)
		}
	}
	// The stale one's pid is whichever the reaped child had.
	want := []string{`"live" "report" "container" ` + strconv.Itoa(os.Getpid()) + ` false`, `"stale" "hello" "rlimit" true`}
	for i, a := range active {
		got := []string{string(a["invocation_id"]), string(a["skill_id"]), string(a["isolation"]), string(a["pid"]), string(a["stale"])}
		if i == 1 {
			got = slices.Delete(got, 3, 4)
		}
		if strings.Join(got, " ") != want[i] {
			t.Errorf("invocation %d: %s, want %s", i, strings.Join(got, " "), want[i])
		}
	}
	if errOut != "note: 1 invocation is stale: its supervisor is gone and it never finished; run 'skillrun gc' to collect it\n" {
		t.Errorf("stderr %q", errOut)
	}
}

func TestBrokerStatusHuman(t *testing.T) {
	root, since := statusFixture(t)
	code, out, errOut := run(t, "--root", root, "broker", "status")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6:\n%s", len(lines), out)
	}
	if want := "today (since " + since.Format(time.RFC3339) + "): 3 tool calls, 2 denied"; lines[0] != want {
		t.Errorf("line 0 %q, want %q", lines[0], want)
	}
	if lines[1] != "2 active invocations" || !strings.HasPrefix(lines[2], "INVOCATION  SKILL   STARTED") {
		t.Errorf("head:\n%s", out)
	}
	live, stale := strings.Fields(lines[3]), strings.Fields(lines[4])
	if len(live) != 8 || live[0] != "live" || live[4] != "1m30s" || live[5] != strconv.Itoa(os.Getpid()) || live[6] != "container" || live[7] != "running" {
		t.Errorf("live row %q", lines[3])
	}
	if len(stale) != 8 || stale[0] != "stale" || stale[6] != "rlimit" || stale[7] != "stale" {
		t.Errorf("stale row %q", lines[4])
	}
	if !strings.HasPrefix(lines[5], "note: 1 invocation is stale") {
		t.Errorf("note %q", lines[5])
	}
}

func TestBrokerStatusEmpty(t *testing.T) {
	root := t.TempDir()
	since := startOfDay(time.Now())
	code, out, errOut := run(t, "--root", root, "broker", "status")
	if want := "today (since " + since.Format(time.RFC3339) + "): 0 tool calls, 0 denied\nno active invocations\n"; code != 0 || out != want || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	code, out, _ = run(t, "--root", root, "broker", "status", "--json")
	var got struct {
		Active json.RawMessage `json:"active_invocations"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || string(got.Active) != "[]" {
		t.Fatalf("exit %d, active_invocations %s (%v); want []", code, got.Active, err)
	}
}

func TestStartOfDay(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		in, want time.Time
	}{
		{time.Date(2026, 5, 16, 23, 59, 59, 0, time.UTC), time.Date(2026, 5, 16, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 5, 16, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 16, 0, 0, 0, 0, time.UTC)},
		// 20:00 UTC on the 16th is already the 17th in Tokyo.
		{time.Date(2026, 5, 16, 20, 0, 0, 0, time.UTC).In(tokyo), time.Date(2026, 5, 17, 0, 0, 0, 0, tokyo)},
	}
	for _, tt := range tests {
		if got := startOfDay(tt.in); !got.Equal(tt.want) || got.Location() != tt.want.Location() {
			t.Errorf("startOfDay(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The help of every broker command carries its example, and cobra's
// completion command is there.
func TestBrokerHelpExamples(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"broker", "status", "--help"}, "skillrun broker status --json | jq"},
		{[]string{"broker", "status", "--help"}, "local calendar day"},
		{[]string{"broker", "tail", "--help"}, "skillrun broker tail --invocation report-1 --follow"},
		{[]string{"broker", "tail", "--help"}, "up to --wait (default\n10s)"},
		{[]string{"broker", "--help"}, "skillrun broker status\n"},
	}
	for _, tt := range tests {
		code, out, _ := run(t, tt.args...)
		if code != 0 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, output lacks %q:\n%s", tt.args, code, tt.want, out)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := run(t, "completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, "skillrun") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errOut)
		}
	}
}
