//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stampedLine is a line a process wrote and when the test read it.
type stampedLine struct {
	at   time.Time
	text string
}

// readLines sends each line of r, stamped, until r ends; then closes.
func readLines(r io.Reader) <-chan stampedLine {
	ch := make(chan stampedLine, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- stampedLine{time.Now(), sc.Text()}
		}
	}()
	return ch
}

// nextLine is the next line of ch; what says whose, for the failure.
func nextLine(t *testing.T, ch <-chan stampedLine, what string) stampedLine {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("%s ended before the next line", what)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no line from %s in 30s", what)
	}
	return stampedLine{}
}

// brokerStatus is `broker status --json`.
type brokerStatus struct {
	Active []struct {
		InvocationID string `json:"invocation_id"`
		SkillID      string `json:"skill_id"`
		StartedAt    string `json:"started_at"`
		PID          int    `json:"pid"`
		Isolation    string `json:"isolation"`
		Stale        bool   `json:"stale"`
	} `json:"active_invocations"`
	Calls  int64  `json:"tool_calls_today"`
	Denied int64  `json:"denied_today"`
	Since  string `json:"since"`
}

// running is a `skillrun exec` in the background, its stdout read a line at
// a time and its stdin open.
type running struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  <-chan stampedLine
	stderr *bytes.Buffer
}

func (e *env) start(id, dir string) *running {
	e.t.Helper()
	r := &running{t: e.t, stderr: &bytes.Buffer{}}
	r.cmd = exec.CommandContext(e.t.Context(), skillrunBin, "--root", e.root, "exec", "--invocation-id", id, dir)
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { r.cmd.Process.Kill() })
	r.lines = readLines(out)
	return r
}

// wait drains stdout and waits for exec to exit with code.
func (r *running) wait(code int) {
	r.t.Helper()
	for range r.lines {
	}
	err := r.cmd.Wait()
	if got := r.cmd.ProcessState.ExitCode(); got != code {
		r.t.Fatalf("exec: exit %d (%v), want %d\nstderr:\n%s", got, err, code, r.stderr)
	}
}

func (e *env) status() brokerStatus {
	e.t.Helper()
	r := e.run("broker", "status", "--json")
	wantExit(e.t, r, 0)
	var s brokerStatus
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		e.t.Fatalf("broker status --json: %v\n%s", err, r.stdout)
	}
	return s
}

// Seed criteria 20 and 21, end to end: a skill makes calls 300 ms apart in
// the sandbox while `broker tail --follow`, a second process started
// before it, prints a line per call as it happens and ends when the
// invocation does; `broker status` meanwhile lists it with exact counts.
func TestBrokerTailAndStatusLive(t *testing.T) {
	e := newEnv(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := e.skill("ticker", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+`
import time
connect()
def read():
    r = call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})
    assert "result" in r, r
for i in range(3):
    read()
    print("call %d" % i, flush=True)
    time.sleep(0.3)
r = call("tool.call", {"tool": "Bash", "args": {"command": "true"}})
assert "error" in r, r
print("denied", flush=True)
sys.stdin.readline()  # the test's go-ahead, once it has looked at status
read()
print("call 3", flush=True)
`)
	e.trust(dir)
	id := "it-tail-live"

	tail := exec.CommandContext(t.Context(), skillrunBin, "--root", e.root, "broker", "tail", "--invocation", id, "--follow")
	tailOut, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var tailErr bytes.Buffer
	tail.Stderr = &tailErr
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	defer tail.Process.Kill()
	tailLines := readLines(tailOut)

	skill := e.start(id, dir)
	skillLines, skillIn, skillErr := skill.lines, skill.stdin, skill.stderr
	if l := nextLine(t, tailLines, "tail"); l.text != "invocation "+id+" of skill ticker; times UTC" {
		t.Fatalf("tail heading %q; stderr %q", l.text, tailErr.String())
	}
	// Each call's tail line against the skill's own line after the call
	// returned: the tail line may even come first, as the row is recorded
	// before the reply is sent.
	expect := func(skillSays, tailHas string) {
		t.Helper()
		s := nextLine(t, skillLines, "the skill")
		if s.text != skillSays {
			t.Fatalf("skill printed %q, want %q; stderr %q", s.text, skillSays, skillErr.String())
		}
		l := nextLine(t, tailLines, "tail")
		if !strings.Contains(l.text, tailHas) {
			t.Errorf("tail line %q lacks %q", l.text, tailHas)
		}
		lag := l.at.Sub(s.at)
		t.Logf("%-7s tail line %+6.1fms after the skill's", skillSays, float64(lag.Microseconds())/1000)
		if lag > 250*time.Millisecond {
			t.Errorf("%s: tail line %s after the skill's, want < 250ms", skillSays, lag)
		}
	}
	for i := range 3 {
		expect(fmt.Sprintf("call %d", i), "Read          success")
	}
	expect("denied", "Bash          denied: ")

	// The skill waits on stdin: status sees it mid-run.
	st := e.status()
	if len(st.Active) != 1 || st.Active[0].InvocationID != id || st.Active[0].SkillID != "ticker" || st.Active[0].Stale ||
		st.Active[0].PID != skill.cmd.Process.Pid || st.Active[0].Isolation == "" {
		t.Errorf("active invocations while it runs: %+v (exec pid %d)", st.Active, skill.cmd.Process.Pid)
	}
	if st.Calls != 3 || st.Denied != 1 {
		t.Errorf("while it runs: tool_calls_today %d, denied_today %d; want 3 and 1", st.Calls, st.Denied)
	}
	if r := e.run("broker", "status"); !strings.Contains(r.stdout, "3 tool calls, 1 denied") || !strings.Contains(r.stdout, id+"  ticker") || !strings.Contains(r.stdout, "running") {
		t.Errorf("broker status:\n%s", r.stdout)
	}

	if _, err := io.WriteString(skillIn, "go\n"); err != nil {
		t.Fatal(err)
	}
	skillIn.Close()
	expect("call 3", "Read          success")
	skill.wait(0)
	ended := time.Now()
	if l := nextLine(t, tailLines, "tail"); !strings.Contains(l.text, "invocation ended: completed (exit 0)") {
		t.Errorf("tail's last line %q", l.text)
	}
	if err := tail.Wait(); err != nil {
		t.Fatalf("tail: %v; stderr %q", err, tailErr.String())
	}
	if d := time.Since(ended); d > time.Second {
		t.Errorf("tail exited %s after the invocation ended", d)
	}
	if l, ok := <-tailLines; ok {
		t.Errorf("tail printed more: %q", l.text)
	}

	st = e.status()
	if len(st.Active) != 0 || st.Calls != 4 || st.Denied != 1 {
		t.Errorf("after the run: %+v; want no active invocation, 4 calls, 1 denied", st)
	}
	// The finished invocation, without --follow: the same lines, at once.
	r := e.run("broker", "tail", "--invocation", id, "--json")
	wantExit(t, r, 0)
	var kinds []string
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var l struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("tail --json line %q: %v", line, err)
		}
		kinds = append(kinds, strings.TrimPrefix(l.Kind, "skill."))
	}
	if got := strings.Join(kinds, " "); got != "tool_call_completed tool_call_completed tool_call_completed tool_denied tool_call_completed invoked_completed" {
		t.Errorf("tail --json of the finished invocation: %s", got)
	}
}

// Several exec processes write the store while status reads it: every
// status answers at once, its counts never go backwards, and once each
// skill has made its calls (and waits on stdin) they come to the exact
// totals.
func TestBrokerStatusConcurrentExecs(t *testing.T) {
	const skills, calls = 3, 200
	e := newEnv(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := e.skill("busy", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+fmt.Sprintf(`
connect()
for i in range(%d):
    r = call("tool.call", {"tool": "Read", "args": {"path": "%s/f"}})
    assert "result" in r, r
r = call("tool.call", {"tool": "Write", "args": {"path": "%s/g", "body": "y"}})
assert "error" in r, r
print("done", flush=True)
sys.stdin.readline()
`, calls, data, data))
	e.trust(dir)
	var runs []*running
	for i := range skills {
		runs = append(runs, e.start(fmt.Sprintf("it-busy-%d", i), dir))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, r := range runs {
			if l, ok := <-r.lines; !ok || l.text != "done" {
				t.Errorf("a skill printed %q (ended %v); stderr %s", l.text, !ok, r.stderr)
			}
		}
	}()
	var last int64
	for polls := 0; ; polls++ {
		start := time.Now()
		st := e.status()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("status took %s while %d execs wrote", d, skills)
		}
		if st.Calls < last || st.Calls > skills*calls {
			t.Errorf("tool_calls_today %d after %d", st.Calls, last)
		}
		last = st.Calls
		select {
		case <-done:
		default:
			continue
		}
		t.Logf("%d status reads while the skills ran", polls)
		break
	}
	// A reply does not wait for its rows' commit (DESIGN §7: the audit
	// queue never holds up a call), so the last rows land a moment after.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := e.status()
		if len(st.Active) == skills && st.Calls == skills*calls && st.Denied == skills {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("all waiting: %d active, %d calls, %d denied; want %d, %d, %d", len(st.Active), st.Calls, st.Denied, skills, skills*calls, skills)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range runs {
		r.stdin.Close()
		r.wait(0)
	}
	if st := e.status(); len(st.Active) != 0 {
		t.Errorf("after the runs: %+v", st.Active)
	}
}
