package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

var tailFinished = []store.Row{rowStarted, rowReadStart, rowReadDone, rowDenied, rowCompleted}

func TestBrokerTailFinished(t *testing.T) {
	root := seedInvocation(t, "inv-1", true, tailFinished...)
	want := "invocation inv-1 of skill hello; times UTC\n" +
		"10:00:00.017  Read          success                             12ms    0af76519\n" +
		"10:00:00.020  Bash          denied: tool_in_disallowed_tools    -       0af76519\n" +
		"10:00:01.500  invocation ended: completed (exit 0) after 1.5s\n"
	// A finished invocation prints the same with --follow, and exits.
	for _, follow := range []bool{false, true} {
		args := []string{"--root", root, "broker", "tail", "--invocation", "inv-1"}
		if follow {
			args = append(args, "--follow")
		}
		code, out, errOut := run(t, args...)
		if code != 0 || errOut != "" || out != want {
			t.Errorf("follow %v: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", follow, code, errOut, out, want)
		}
	}
}

func TestBrokerTailJSON(t *testing.T) {
	root := seedInvocation(t, "inv-1", true, tailFinished...)
	code, out, errOut := run(t, "--root", root, "broker", "tail", "--invocation", "inv-1", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := []string{
		`{"ts":"2026-05-16T10:00:00.017Z","kind":"skill.tool_call_completed","tool":"Read","outcome":"success","duration_ms":12,"trace_id":"` + replayTrace + `"}`,
		`{"ts":"2026-05-16T10:00:00.02Z","kind":"skill.tool_denied","tool":"Bash","reason":"tool_in_disallowed_tools","trace_id":"` + replayTrace + `"}`,
		`{"ts":"2026-05-16T10:00:01.5Z","kind":"skill.invoked_completed","outcome":"completed","duration_ms":1500,"exit_code":0,"trace_id":"` + replayTrace + `"}`,
	}
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBrokerTailErrors(t *testing.T) {
	root := seedInvocation(t, "inv-1", true, tailFinished...)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown invocation", []string{"--invocation", "nope"}, exitFailure, `skillrun: invocation "nope" not found in ` + root + "/state.db\n"},
		{"unknown with --follow waits, then fails", []string{"--invocation", "nope", "-f", "--wait", "300ms"}, exitFailure,
			`skillrun: invocation "nope" not found in ` + root + "/state.db after waiting 300ms\n"},
		{"no invocation", nil, exitUsage, "skillrun: usage: --invocation ID is required (see 'skillrun broker tail --help')\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := run(t, append([]string{"--root", root, "broker", "tail"}, tt.args...)...)
			if code != tt.code || errOut != tt.want || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stderr %q", code, out, errOut, tt.code, tt.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// Without --follow, a live invocation prints what exists and says there is
// more to come; a stale one says to run gc.
func TestBrokerTailSnapshotNotes(t *testing.T) {
	dead := deadPID(t)
	tests := []struct {
		pid  int
		note string
	}{
		{os.Getpid(), "note: invocation inv-1 is still running; --follow prints its calls until it ends\n"},
		{dead, "note: invocation inv-1 never finished and its supervisor (pid " + strconv.Itoa(dead) + ") is gone; run 'skillrun gc'\n"},
	}
	for _, tt := range tests {
		root := t.TempDir()
		st := openStore(t, root)
		if err := st.BeginInvocation(t.Context(), store.Invocation{ID: "inv-1", SkillID: "hello", SupervisorPID: tt.pid}); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, "--root", root, "broker", "tail", "--invocation", "inv-1")
		if code != 0 || out != "invocation inv-1 of skill hello; times UTC\n" || errOut != tt.note {
			t.Errorf("pid %d: exit %d, stdout %q, stderr %q; want note %q", tt.pid, code, out, errOut, tt.note)
		}
	}
}

// lines records what a command writes, a line at a time, with the time
// each line was written.
type lines struct {
	mu  sync.Mutex
	buf []byte
	ch  chan stamped
}

type stamped struct {
	at   time.Time
	text string
}

func (l *lines) Write(p []byte) (int, error) {
	at := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.ch <- stamped{at, string(l.buf[:i])}
		l.buf = l.buf[i+1:]
	}
}

// syncBuffer is a bytes.Buffer a running command may write while a test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tailing is a `broker tail` running in a goroutine.
type tailing struct {
	out    *lines
	errOut *syncBuffer
	done   chan int // the exit code
}

func startTail(t *testing.T, ctx context.Context, args ...string) *tailing {
	t.Helper()
	tl := &tailing{out: &lines{ch: make(chan stamped, 1000)}, errOut: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		err := Run(ctx, append([]string{"broker", "tail"}, args...), strings.NewReader(""), tl.out, tl.errOut)
		tl.done <- exitCode(err, tl.errOut)
	}()
	return tl
}

// next is the next line, or a failure after a second.
func (tl *tailing) next(t *testing.T) stamped {
	t.Helper()
	select {
	case l := <-tl.out.ch:
		return l
	case code := <-tl.done:
		t.Fatalf("tail exited %d before the next line; stderr %q", code, tl.errOut.String())
	case <-time.After(time.Second):
		t.Fatal("no line within 1s")
	}
	return stamped{}
}

func (tl *tailing) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case code := <-tl.done:
		return code
	case <-time.After(within):
		t.Fatalf("tail still running %s later", within)
	}
	return 0
}

// Seed criterion 21: tail --follow prints a line per call as it happens,
// each within 250 ms of its row being written, and exits when the
// invocation ends.
func TestBrokerTailFollow(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	ctx := t.Context()
	id := "live-1"
	tl := startTail(t, ctx, "--root", root, "--invocation", id, "--follow")
	// Started before the invocation exists: tail waits for it.
	time.Sleep(250 * time.Millisecond)
	if err := st.BeginInvocation(ctx, store.Invocation{ID: id, SkillID: "report", Isolation: "container", SupervisorPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if l := tl.next(t); l.text != "invocation live-1 of skill report; times UTC" {
		t.Fatalf("heading %q", l.text)
	}
	steps := []struct {
		kind, payload string
		want          string // the line's text after the time; "" for no line
	}{
		{store.KindInvokedStarted, `{"isolation":"container"}`, ""},
		{store.KindToolCallStarted, `{"tool_name":"Read","call_id":"c1"}`, ""},
		{store.KindToolCallCompleted, `{"tool_name":"Read","call_id":"c1","outcome":"success","duration_ms":4}`, "Read          success                             4ms     0af76519"},
		{store.KindToolDenied, `{"tool_name":"Bash","reason":"tool_not_declared"}`, "Bash          denied: tool_not_declared           -       0af76519"},
		{store.KindToolCallStarted, `{"tool_name":"HttpFetch","call_id":"c2"}`, ""},
		{store.KindToolCallCompleted, `{"tool_name":"HttpFetch","call_id":"c2","outcome":"timeout","duration_ms":2000}`, "HttpFetch     timeout                             2s      0af76519"},
		{store.KindToolCallStarted, `{"tool_name":"Read","call_id":"c3"}`, ""},
		{store.KindToolCallCompleted, `{"tool_name":"Read","call_id":"c3","outcome":"error","duration_ms":0}`, "Read          error                               0ms     0af76519"},
		{store.KindInvokedCompleted, `{"outcome":"completed","exit_code":3,"duration_ms":950}`, "invocation ended: completed (exit 3) after 950ms"},
	}
	var worst time.Duration
	for i, s := range steps {
		// Varied gaps, so rows land at different points of tail's poll.
		time.Sleep(time.Duration(40+i*37%130) * time.Millisecond)
		ts := time.Now()
		if err := st.Audit(ctx, store.Row{TS: ts, Kind: s.kind, InvocationID: id, SkillID: "report", TraceID: replayTrace, Payload: json.RawMessage(s.payload)}); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		if s.want == "" {
			continue
		}
		l := tl.next(t)
		d := l.at.Sub(written)
		worst = max(worst, d)
		if d > 250*time.Millisecond {
			t.Errorf("step %d: line %s after its row was written, want < 250ms", i, d)
		}
		if want := ts.UTC().Format("15:04:05.000") + "  " + s.want; l.text != want {
			t.Errorf("step %d:\n got %q\nwant %q", i, l.text, want)
		}
	}
	t.Logf("slowest line: %s after its row", worst)
	if code := tl.exit(t, 250*time.Millisecond); code != 0 || tl.errOut.String() != "" {
		t.Fatalf("exit %d, stderr %q", code, tl.errOut.String())
	}
	if len(tl.out.ch) != 0 {
		t.Errorf("extra line %q", (<-tl.out.ch).text)
	}
}

// The supervisor dies while tail follows: tail says so and exits 1.
func TestBrokerTailFollowSupervisorDies(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	sup := exec.Command("sleep", "30")
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer sup.Process.Kill()
	if err := st.BeginInvocation(t.Context(), store.Invocation{ID: "inv-1", SkillID: "hello", SupervisorPID: sup.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	tl := startTail(t, t.Context(), "--root", root, "--invocation", "inv-1", "-f", "--json")
	time.Sleep(300 * time.Millisecond)
	if err := st.Audit(t.Context(), store.Row{Kind: store.KindToolDenied, InvocationID: "inv-1", SkillID: "hello", Payload: json.RawMessage(`{"tool_name":"Bash","reason":"tool_not_declared"}`)}); err != nil {
		t.Fatal(err)
	}
	if l := tl.next(t); !strings.Contains(l.text, `"kind":"skill.tool_denied","tool":"Bash","reason":"tool_not_declared"`) {
		t.Fatalf("line %q", l.text)
	}
	sup.Process.Kill()
	sup.Wait()
	code := tl.exit(t, time.Second)
	want := "skillrun: invocation inv-1: its supervisor (pid " + strconv.Itoa(sup.Process.Pid) + ") is gone and the invocation never finished; run 'skillrun gc'\n"
	if code != exitFailure || tl.errOut.String() != want {
		t.Fatalf("exit %d, stderr %q; want 1, %q", code, tl.errOut.String(), want)
	}
}

// A record finished without its invoked_completed row (the row was lost):
// the end comes from the record.
func TestBrokerTailFollowEndWithoutRow(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	if err := st.BeginInvocation(t.Context(), store.Invocation{ID: "inv-1", SkillID: "hello", SupervisorPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	tl := startTail(t, t.Context(), "--root", root, "--invocation", "inv-1", "-f")
	tl.next(t) // heading
	time.Sleep(150 * time.Millisecond)
	if err := st.FinishInvocation(t.Context(), "inv-1", "failed", 2); err != nil {
		t.Fatal(err)
	}
	l := tl.next(t)
	if !strings.HasSuffix(l.text, "  invocation ended: failed (exit 2)") {
		t.Errorf("end line %q", l.text)
	}
	if code := tl.exit(t, time.Second); code != 0 || !strings.Contains(tl.errOut.String(), "has no skill.invoked_completed row") {
		t.Fatalf("exit %d, stderr %q", code, tl.errOut.String())
	}
}

// Ctrl-C ends a follow with 130 and no message.
func TestBrokerTailInterrupted(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	if err := st.BeginInvocation(t.Context(), store.Invocation{ID: "inv-1", SkillID: "hello", SupervisorPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	tl := startTail(t, ctx, "--root", root, "--invocation", "inv-1", "-f")
	tl.next(t) // heading
	cancel()
	if code := tl.exit(t, time.Second); code != exitInterrupted || tl.errOut.String() != "" {
		t.Fatalf("exit %d, stderr %q; want 130 and nothing", code, tl.errOut.String())
	}
}

// A skill refused before it began has rows and no invocation record; there
// is nothing to wait for.
func TestBrokerTailRefusedBeforeBegin(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	if err := st.Audit(t.Context(), store.Row{Kind: store.KindLoaderDefect, InvocationID: "inv-1", SkillID: "hello", Payload: json.RawMessage(`{"reason":"wider"}`)}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "--root", root, "broker", "tail", "--invocation", "inv-1")
	if code != 0 || out != "invocation inv-1 of skill hello; times UTC\n" || errOut != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "--root", root, "broker", "tail", "--invocation", "inv-1", "--follow")
	if code != 0 || !strings.HasPrefix(errOut, "note: invocation inv-1 never began") {
		t.Errorf("--follow: exit %d, stderr %q", code, errOut)
	}
}
